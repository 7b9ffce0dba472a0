/* SPDX-License-Identifier: Apache-2.0 */
/* AlltoAllVC: a count matrix of equal entries (as hccl_test). */
#include "hccl_test.h"

static HcclResult run(struct ht_ctx *c)
{
	uint64_t n = (uint64_t)c->nranks;

	for (uint64_t k = 0; k < n * n; k++)
		c->counts[k] = c->block;
	return HcclAlltoAllVC(c->send, c->counts, c->o->dtype, c->recv,
			      c->o->dtype, c->comm, c->stream);
}

HT_TOOL(.name = "alltoallvc_test", .sizing = HT_SIZE_ALLTOALL, .run = run)
