/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TOOLS_HT_PMI_H
#define OHC_TOOLS_HT_PMI_H

/*
 * A PMI-1 client over the wire protocol: the text lines a process
 * exchanges with its launcher on the socket PMI_FD names. Slurm's srun
 * (--mpi=pmi2, whose plugin also speaks PMI-1) and MPICH's mpirun (Hydra)
 * both offer it, so the tools need no MPI and no PMI library to get their
 * rank, size and a key-value space to hand out the root info.
 *
 * Blocking calls, one process-wide connection; every failure fills err
 * (one line naming the command and what the launcher said).
 */
#include <stddef.h>

struct ht_pmi {
	int fd;
	int rank, size;
	int vallen_max; /* longest value the launcher takes */
	char kvs[256];	/* the job's key-value space */
};

/* 1 if the environment offers PMI-1 (PMI_FD, PMI_RANK, PMI_SIZE). */
int ht_pmi_available(void);
int ht_pmi_init(struct ht_pmi *p, char *err, size_t len);
int ht_pmi_put(struct ht_pmi *p, const char *key, const char *val, char *err,
	       size_t len);
/* Everyone's puts are visible to every get after everyone came here. */
int ht_pmi_barrier(struct ht_pmi *p, char *err, size_t len);
int ht_pmi_get(struct ht_pmi *p, const char *key, char *val, size_t vlen,
	       char *err, size_t len);
/* Rank 0's len bytes of data to every rank (a put, a barrier, gets). */
int ht_pmi_bcast(struct ht_pmi *p, const char *name, void *data, size_t n,
		 char *err, size_t len);
/*
 * Ask the launcher to end the job with exit code code: the other ranks
 * may be waiting for this one. Returns; the caller exits.
 */
void ht_pmi_abort(struct ht_pmi *p, int code);
/* Tell the launcher we are done (it may treat silence as a crash). */
void ht_pmi_finalize(struct ht_pmi *p);

#endif
