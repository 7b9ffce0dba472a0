/* SPDX-License-Identifier: Apache-2.0 */
/* Scatter: rank r receives block r of the root's pattern. */
#include "hccl_test.h"

static double expect(const struct ht_ctx *c, uint64_t i)
{
	return ht_pattern((int)c->o->root, (uint64_t)c->rank * c->block + i);
}

static HcclResult run(struct ht_ctx *c)
{
	return HcclScatter(c->send, c->recv, c->recv_count, c->o->dtype,
			   c->o->root, c->comm, c->stream);
}

HT_TOOL(.name = "scatter_test", .sizing = HT_SIZE_SCATTER,
	.input = ht_input_root, .expect = expect, .run = run)
