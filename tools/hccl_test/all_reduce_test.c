/* SPDX-License-Identifier: Apache-2.0 */
#include <math.h>

#include "hccl_test.h"

/* Every input element is 2; the expected result follows analytically. */
static double factor(int n)
{
	return n > 1 ? 2.0 * (n - 1) / n : 1.0;
}

static void counts(const struct ht_opts *o, uint64_t bytes, uint64_t *sc,
		   uint64_t *rc)
{
	size_t es = ht_dtype_size(o->dtype);

	*sc = *rc = (bytes + es - 1) / es;
}

static uint64_t alg_bytes(const struct ht_opts *o, uint64_t sc, uint64_t rc)
{
	(void)rc;
	return sc * ht_dtype_size(o->dtype);
}

static void fill(const struct ht_opts *o, int rank, void *host, uint64_t n)
{
	(void)rank;
	for (uint64_t i = 0; i < n; i++)
		ht_store(host, o->dtype, i, 2.0);
}

static HcclResult run(const struct ht_opts *o, void *send, void *recv,
		      uint64_t n, HcclComm comm, aclrtStream stream)
{
	return HcclAllReduce(send, recv, n, o->dtype, o->op, comm, stream);
}

static int check(const struct ht_opts *o, int rank, const void *recv,
		 uint64_t n)
{
	double want = 2.0;

	(void)rank;
	if (o->op == HCCL_REDUCE_SUM)
		want = 2.0 * o->nranks;
	else if (o->op == HCCL_REDUCE_PROD)
		want = pow(2.0, o->nranks);
	for (uint64_t i = 0; i < n; i++)
		if (ht_load(recv, o->dtype, i) != want)
			return 1;
	return 0;
}

static const struct ht_test test = {
	.name = "all_reduce_test",
	.is_reduce = 1,
	.busbw_factor = factor,
	.counts = counts,
	.alg_bytes = alg_bytes,
	.fill = fill,
	.run = run,
	.check = check,
};

int main(int argc, char **argv)
{
	return ht_main(argc, argv, &test);
}
