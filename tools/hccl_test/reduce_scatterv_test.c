/* SPDX-License-Identifier: Apache-2.0 */
/* ReduceScatterV with equal counts (as hccl_test), packed blocks. */
#include "hccl_test.h"

static HcclResult run(struct ht_ctx *c)
{
	ht_uniform_v(c);
	return HcclReduceScatterV(c->send, c->counts, c->displs, c->recv,
				  c->recv_count, c->o->dtype, c->o->op,
				  c->comm, c->stream);
}

HT_TOOL(.name = "reduce_scatterv_test", .sizing = HT_SIZE_SCATTER, .reduce = 1,
	.run = run)
