/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A program started by srun or mpirun, without MPI: its rank, the rank
 * count and its index on the host come from the launcher's environment;
 * rank 0 makes the root info and writes it into a folder every rank can
 * read (on one host /tmp; across hosts a shared file system), the others
 * wait for the file. Then one AllReduce, checked.
 *
 *   srun -n 4 launch_example [DIR]          (any --mpi plugin)
 *   mpirun -np 4 launch_example [DIR]       (Open MPI)
 */
#include <acl/acl.h>
#include <hccl/hccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The first of the variables that is set, as an integer; -1 if none. */
static int env_int(const char *a, const char *b, const char *c)
{
	const char *v = getenv(a);

	if (!v)
		v = getenv(b);
	if (!v && c)
		v = getenv(c);
	return v ? atoi(v) : -1;
}

int main(int argc, char **argv)
{
	int rank = env_int("SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK");
	int size = env_int("SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE");
	int local = env_int("SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK",
			    "MPI_LOCALRANKID");
	const char *dir = argc > 1 ? argv[1] : "/tmp";
	const char *job = getenv("SLURM_JOB_ID"),
		   *step = getenv("SLURM_STEP_ID");
	char path[512], tmp[600];
	HcclRootInfo root;
	HcclComm comm;
	uint32_t ndev = 1;
	float data[1024];
	FILE *f;
	int ok = 1;

	if (rank < 0 || size < 1 || rank >= size) {
		fprintf(stderr, "not started by srun or mpirun\n");
		return 2;
	}
	/* one file per job step (Slurm) or mpirun (Open MPI's namespace) */
	if (job)
		snprintf(path, sizeof(path), "%s/hccl-root.%s.%s", dir, job,
			 step ? step : "0");
	else
		snprintf(path, sizeof(path), "%s/hccl-root.%s", dir,
			 getenv("PMIX_NAMESPACE") ? getenv("PMIX_NAMESPACE")
						  : "run");
	aclInit(NULL);
	aclrtGetDeviceCount(&ndev);
	if (aclrtSetDevice((local < 0 ? rank : local) % (int)ndev) !=
	    ACL_SUCCESS)
		return 1;
	if (rank == 0) {
		if (HcclGetRootInfo(&root) != HCCL_SUCCESS)
			return 1;
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		f = fopen(tmp, "wb");
		if (!f || fwrite(&root, sizeof(root), 1, f) != 1 || fclose(f) ||
		    rename(tmp, path)) {
			perror(path);
			return 1;
		}
	} else {
		/* wait for rank 0's file (a minute at most) */
		for (int i = 0; !(f = fopen(path, "rb")) && i < 6000; i++)
			usleep(10000);
		if (!f || fread(&root, sizeof(root), 1, f) != 1) {
			fprintf(stderr, "rank %d: no root info in %s\n", rank,
				path);
			return 1;
		}
		fclose(f);
	}
	if (HcclCommInitRootInfo(size, &root, rank, &comm) != HCCL_SUCCESS)
		return 1;
	if (rank == 0)
		unlink(path); /* every rank has joined: no one reads it now */
	for (int i = 0; i < 1024; i++)
		data[i] = (float)rank;
	if (HcclAllReduce(data, data, 1024, HCCL_DATA_TYPE_FP32,
			  HCCL_REDUCE_SUM, comm, NULL) != HCCL_SUCCESS)
		ok = 0;
	ok = ok && data[0] == (float)(size * (size - 1) / 2);
	printf("rank %d of %d: data[0] = %.0f (expect %d) %s\n", rank, size,
	       data[0], size * (size - 1) / 2, ok ? "ok" : "WRONG");
	HcclCommDestroy(comm);
	aclFinalize();
	return ok ? 0 : 1;
}
