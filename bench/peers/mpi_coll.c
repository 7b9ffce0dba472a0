/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The MPI peer of bench/compare.sh (built with Open MPI's and MPICH's
 * mpicc): one collective, fp32 (sum for reductions, root 0, out of place
 * but Broadcast), over the same sizes, warm-ups and iterations as
 * OpenHCCL's hccl_test tools, printing the same columns.
 * usage: mpirun -np N mpi_coll OP MINBYTES MAXBYTES FACTOR ITERS WARMUP
 * OP: allreduce allgather reduce_scatter broadcast reduce alltoall
 * OHC_BENCH_TOUCH=1: the input written again before each call (peer_touch)
 */
#include <mpi.h>
#include <stdlib.h>

#include "peer_common.h"

static void run(int op, float *s, float *r, const struct peer_counts *c)
{
	int blk = (int)c->block;

	switch (op) {
	case PEER_ALLREDUCE:
		MPI_Allreduce(s, r, blk, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		break;
	case PEER_ALLGATHER:
		MPI_Allgather(s, blk, MPI_FLOAT, r, blk, MPI_FLOAT,
			      MPI_COMM_WORLD);
		break;
	case PEER_REDUCE_SCATTER:
		MPI_Reduce_scatter_block(s, r, blk, MPI_FLOAT, MPI_SUM,
					 MPI_COMM_WORLD);
		break;
	case PEER_BROADCAST:
		MPI_Bcast(r, blk, MPI_FLOAT, 0, MPI_COMM_WORLD);
		break;
	case PEER_REDUCE:
		MPI_Reduce(s, r, blk, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
		break;
	default:
		MPI_Alltoall(s, blk, MPI_FLOAT, r, blk, MPI_FLOAT,
			     MPI_COMM_WORLD);
		break;
	}
}

/* One call, the input written again first when touching (pristine). */
static void touch_run(int op, float *s, float *r, const struct peer_counts *c,
		      float *in, const float *pristine, size_t in_bytes)
{
	if (pristine)
		memcpy(in, pristine, in_bytes);
	run(op, s, r, c);
}

/* One size: the average microseconds (rank 0's clock) and the check. */
static double one_size(int op, int rank, int n, unsigned long long b,
		       int iters, int warmup, int *ok_p)
{
	struct peer_counts c = peer_sizing(op, b, n);
	float *s = malloc(c.send * 4 + 4), *r = malloc(c.recv * 4 + 4);
	float *in, *pristine = NULL;
	size_t in_bytes;
	double t0, us;
	int ok = 1, all_ok;

	for (unsigned long long i = 0; i < c.send; i++)
		s[i] = peer_input(op, rank);
	for (unsigned long long i = 0; i < c.recv; i++)
		r[i] = op == PEER_BROADCAST ? peer_input(op, rank) : -1.0f;
	/* the input: Broadcast's is the root's r, in place */
	in = op == PEER_BROADCAST ? r : s;
	in_bytes = (op == PEER_BROADCAST ? c.recv : c.send) * 4;
	if (peer_touch() && (pristine = malloc(in_bytes + 4)))
		memcpy(pristine, in, in_bytes);
	for (int i = 0; i < warmup; i++)
		touch_run(op, s, r, &c, in, pristine, in_bytes);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (int i = 0; i < iters; i++)
		touch_run(op, s, r, &c, in, pristine, in_bytes);
	us = (MPI_Wtime() - t0) * 1e6 / iters;
	free(pristine);
	for (unsigned long long i = 0; i < c.recv; i++)
		ok &= peer_result_ok(op, rank, n, i, c.block, r[i]);
	MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	free(s);
	free(r);
	*ok_p = all_ok;
	return us;
}

int main(int argc, char **argv)
{
	int rank, n, op, iters, warmup, ok;
	unsigned long long minb, maxb;
	double factor, us;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	op = argc == 7 ? peer_op_parse(argv[1]) : -1;
	if (op < 0) {
		if (rank == 0)
			fprintf(stderr, "usage: %s OP MIN MAX FACTOR ITERS "
					"WARMUP\n", argv[0]);
		MPI_Finalize();
		return 1;
	}
	minb = strtoull(argv[2], NULL, 0);
	maxb = strtoull(argv[3], NULL, 0);
	factor = atof(argv[4]);
	iters = atoi(argv[5]);
	warmup = atoi(argv[6]);
	if (rank == 0)
		peer_print_header();
	for (unsigned long long b = minb; b <= maxb;
	     b = (unsigned long long)((double)b * factor)) {
		us = one_size(op, rank, n, b, iters, warmup, &ok);
		if (rank == 0)
			peer_print_row(op, n, b, us, ok);
		if (factor <= 1.0)
			break;
	}
	MPI_Finalize();
	return 0;
}
