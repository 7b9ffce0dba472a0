/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The peer side of bench/allreduce.sh: MPI_Allreduce (fp32 sum, out of
 * place) over the same sizes, warm-ups and iterations as all_reduce_test,
 * printing the same columns so the two can be compared line by line.
 * usage: mpirun -np N mpi_allreduce MINBYTES MAXBYTES FACTOR ITERS WARMUP
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int rank, n, iters, warmup;
	unsigned long long minb, maxb;
	double factor;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (argc != 6) {
		if (rank == 0)
			fprintf(stderr, "usage: %s MIN MAX FACTOR ITERS WARMUP\n",
				argv[0]);
		MPI_Finalize();
		return 1;
	}
	minb = strtoull(argv[1], NULL, 0);
	maxb = strtoull(argv[2], NULL, 0);
	factor = atof(argv[3]);
	iters = atoi(argv[4]);
	warmup = atoi(argv[5]);
	if (rank == 0)
		printf("%-15s | %-12s | %-18s | %-13s | %s\n",
		       "data_size(Bytes):", "aveg_time(us):",
		       "alg_bandwidth(GB/s):", "check_result:",
		       "bus_bandwidth(GB/s):");
	for (unsigned long long b = minb; b <= maxb;
	     b = (unsigned long long)(b * factor)) {
		size_t cnt = (b + 3) / 4;
		float *s = malloc(cnt * 4), *r = malloc(cnt * 4);
		double t0, us, algbw;
		int ok = 1;

		for (size_t i = 0; i < cnt; i++)
			s[i] = 2.0f;
		for (int i = 0; i < warmup; i++)
			MPI_Allreduce(s, r, (int)cnt, MPI_FLOAT, MPI_SUM,
				      MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int i = 0; i < iters; i++)
			MPI_Allreduce(s, r, (int)cnt, MPI_FLOAT, MPI_SUM,
				      MPI_COMM_WORLD);
		us = (MPI_Wtime() - t0) * 1e6 / iters;
		for (size_t i = 0; i < cnt; i++)
			ok &= r[i] == 2.0f * n;
		algbw = (double)cnt * 4 / us * 1e-3;
		if (rank == 0)
			printf("%-17llu | %-14.2f | %-20.5f | %-13s | %.5f\n",
			       b, us, algbw, ok ? "success" : "failed",
			       algbw * 2.0 * (n - 1) / n);
		free(s);
		free(r);
		if (factor <= 1.0)
			break;
	}
	MPI_Finalize();
	return 0;
}
