/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The peer of ohc_init_scale_bench: MPI_Init and one 8 B AllReduce (fp32
 * sum), timed from before MPI_Init to its end, then each rank's VmRSS,
 * VmHWM and Pss; rank 0 prints the medians and maxima as one markdown row
 * without the wall time (bench/init_scale.sh measures mpirun's).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double proc_kb(const char *path, const char *key)
{
	char line[256];
	size_t n = strlen(key);
	double v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':') {
			v = strtod(line + n + 1, NULL);
			break;
		}
	fclose(f);
	return v;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median_col(double *all, int n, int col)
{
	double *v = malloc((size_t)n * sizeof(*v)), m;

	for (int r = 0; r < n; r++)
		v[r] = all[r * 4 + col];
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	free(v);
	return m;
}

static double max_col(const double *all, int n, int col)
{
	double m = 0;

	for (int r = 0; r < n; r++)
		if (all[r * 4 + col] > m)
			m = all[r * 4 + col];
	return m;
}

int main(int argc, char **argv)
{
	double t0 = now_ms(), mine[4], *all = NULL;
	float in[2], out[2];
	int rank, n;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	in[0] = (float)rank;
	in[1] = 1.0f;
	MPI_Allreduce(in, out, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	mine[0] = now_ms() - t0;
	mine[1] = proc_kb("/proc/self/status", "VmRSS");
	mine[2] = proc_kb("/proc/self/smaps_rollup", "Pss");
	mine[3] = proc_kb("/proc/self/status", "VmHWM");
	if (rank == 0)
		all = malloc((size_t)n * sizeof(mine));
	MPI_Gather(mine, 4, MPI_DOUBLE, all, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		int ok = out[1] == (float)n;

		printf("%.1f | %.1f | %.1f | %.1f | %.1f |%s\n",
		       median_col(all, n, 0), max_col(all, n, 0),
		       median_col(all, n, 1) / 1024,
		       median_col(all, n, 2) / 1024, max_col(all, n, 3) / 1024,
		       ok ? "" : " WRONG");
		free(all);
	}
	MPI_Finalize();
	return 0;
}
