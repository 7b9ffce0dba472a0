/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TRANSPORT_SHM_H
#define OHC_TRANSPORT_SHM_H

/*
 * Private to src/transport/shm/: the iface and ep objects of the shm
 * transport and the functions its files share. Threading as in
 * transport.h: one thread drives an iface and its eps; only
 * ohc_shm_bell_ring() on our own bell (iface_wake) runs on other threads.
 */
#include <stdatomic.h>
#include <sys/types.h>

#include "transport/shm/shm_ring.h"
#include "transport/transport.h"
#include "util/list.h"

#define OHC_SHM_HOSTID_MAX 200 /* hostid bytes kept verbatim in the blob */
#define OHC_SHM_ZC_CACHE 8     /* peer exports kept mapped per ep */
/* export ids of shared aclrtMalloc memory (zerocopy/'s count from 1) */
#define OHC_SHM_ZC_IMPLICIT (1ull << 63)

/* A peer's exported memfd, mapped read-only (zero-copy receives). */
struct ohc_shm_zc_import {
	uint64_t id; /* the peer's export id; 0: empty slot */
	void *base;
	size_t size;
	uint64_t last_use;
};

struct ohc_shm_iface {
	struct ohc_iface super;
	uint64_t session;
	pid_t pid;
	uint64_t proc_token;
	int numa_node;
	size_t ring_bytes; /* record bytes per receive ring */
	size_t cma_min;	   /* messages this large go single-copy by CMA */
	size_t zc_min;	   /* ... or from shared aclrtMalloc memory, mapped */
	char hostid[OHC_SHM_HOSTID_MAX + 1];
	uint64_t hostid_hash; /* of the full hostid */
	uint32_t hostid_len;  /* of the full hostid */

	int listen_fd; /* abstract unix socket; -1 after connect */
	int seg_fd;    /* our segment's memfd; -1 after connect */
	struct ohc_shm_seg_hdr *hdr; /* our segment, page 0 (bell) */
	size_t hdr_bytes;
	void *body; /* our segment after page 0: directory + rings */
	size_t body_bytes;
	int connected;

	struct ohc_list eps;	 /* every ep of this iface (ep->link) */
	atomic_int wake_pending; /* iface_wake since the last wait */
	int cma_probe_ok;	 /* process_vm_readv works at all */
};

struct ohc_shm_ep {
	struct ohc_ep super;
	struct ohc_list link; /* in iface->eps */
	pid_t pid;	      /* the peer's pid (checked with SO_PEERCRED) */
	int pidfd;	      /* -1 if pidfd_open is unavailable */
	int connected;
	int dead_logged;
	ohc_status_t err; /* set by ep_cancel or a protocol failure */

	void *peer_seg; /* the peer's whole segment, mapped */
	size_t peer_seg_bytes;
	struct ohc_shm_bell *peer_bell;

	/* sending: our ring in the peer's segment; we are its producer */
	struct ohc_shm_ring_ctl *tx;
	char *tx_data;
	uint64_t tx_bytes;
	uint64_t tx_max_frag;
	uint64_t tx_tail; /* bytes written into tx (never published) */
	int rx_multi;	  /* the last record read had payload lines */
	uint64_t tx_head; /* tx->head as last read (reads it only when short) */
	uint64_t tx_acked;     /* rendezvous sends completed */
	struct ohc_list sends; /* posted, not fully written (FIFO) */
	struct ohc_list rndv;  /* written as rendezvous, awaiting ack */

	/* receiving: the peer's ring in our segment; we are its consumer */
	struct ohc_shm_ring_ctl *rx;
	char *rx_data;
	uint64_t rx_bytes;
	uint64_t rx_max_frag;
	uint64_t rx_head;      /* our copy of rx->head */
	uint64_t rx_acked;     /* rendezvous messages read */
	struct ohc_list recvs; /* posted, not complete (FIFO) */
	int discard;	       /* dropping the rest of a rejected message */
	int rx_cma;	       /* we may read the peer's memory */
	struct ohc_shm_rec rndv_rec; /* rendezvous being read (when rndv_on) */
	int rndv_on;
	size_t rndv_done;
	void *bounce;	      /* CMA reads for reductions */
	const char *rndv_src; /* ZC: the message in our mapping, else NULL */
	struct ohc_shm_zc_import zc_imp[OHC_SHM_ZC_CACHE];
	uint64_t zc_clock;
	int zc_warned;
};

/* shm_seg.c: our segment, the fd exchange and peer mappings. */
ohc_status_t ohc_shm_seg_open(struct ohc_shm_iface *sif);
ohc_status_t ohc_shm_seg_connect(struct ohc_shm_iface *sif,
				 struct ohc_shm_ep **eps, unsigned n,
				 uint64_t deadline);
void ohc_shm_seg_close(struct ohc_shm_iface *sif);
/* Whether a peer's directory entry (a copy: the peer may change the
 * live one) names a ring inside its segment of seg_bytes. */
int ohc_shm_dir_ent_valid(const struct ohc_shm_dir_ent *ent,
			  uint64_t seg_bytes);
void ohc_shm_ep_unmap(struct ohc_shm_ep *sep);

/*
 * Tests: when not 0, overrides the iface's cma_bytes (SIZE_MAX: never).
 * Set before the iface opens.
 */
extern size_t ohc_shm_cma_threshold;

/* shm_cma.c: single-copy reads out of a peer (process_vm_readv). */
int ohc_shm_cma_probe(pid_t pid, uint64_t addr, uint64_t expect);
ohc_status_t ohc_shm_cma_read(const struct ohc_shm_ep *sep, void *dst,
			      uint64_t addr, size_t len);

/* shm_zc.c: zero-copy imports of a peer's exported memory. */
const char *ohc_shm_zc_import(struct ohc_shm_ep *sep,
			      const struct ohc_mem_desc *desc, size_t len);
void ohc_shm_zc_drop_all(struct ohc_shm_ep *sep);
ohc_status_t ohc_shm_ep_mem_map(struct ohc_ep *ep,
				const struct ohc_mem_desc *desc, void **addr_p);
void ohc_shm_ep_mem_unmap(struct ohc_ep *ep, void *addr, size_t len);

/*
 * Ring someone's doorbell after publishing something for them: a full
 * fence orders our publication before the read of `sleeping`, matching
 * the fence the sleeper runs between setting it and re-checking.
 */
void ohc_shm_bell_ring(struct ohc_shm_bell *bell);

#endif
