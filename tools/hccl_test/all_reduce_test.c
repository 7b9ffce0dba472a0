/* SPDX-License-Identifier: Apache-2.0 */
/* AllReduce: every input element is 2, every output the reduction. */
#include "hccl_test.h"

static HcclResult run(struct ht_ctx *c)
{
	return HcclAllReduce(c->send, c->recv, c->send_count, c->o->dtype,
			     c->o->op, c->comm, c->stream);
}

HT_TOOL(.name = "all_reduce_test", .sizing = HT_SIZE_SAME,
	.busbw = HT_BUS_ALLREDUCE, .reduce = 1, .run = run)
