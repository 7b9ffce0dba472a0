/* SPDX-License-Identifier: Apache-2.0 */
/* ReduceScatter: every input element is 2, every output the reduction. */
#include "hccl_test.h"

static HcclResult run(struct ht_ctx *c)
{
	return HcclReduceScatter(c->send, c->recv, c->recv_count, c->o->dtype,
				 c->o->op, c->comm, c->stream);
}

HT_TOOL(.name = "reduce_scatter_test", .sizing = HT_SIZE_SCATTER, .reduce = 1,
	.run = run)
