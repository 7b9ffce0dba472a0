/* SPDX-License-Identifier: Apache-2.0 */
/* Reduce: every input element is 2; only the root's output is checked. */
#include <math.h>

#include "hccl_test.h"

static double expect(const struct ht_ctx *c, uint64_t i)
{
	return c->rank == (int)c->o->root ? ht_expect_reduced(c, i) : NAN;
}

static HcclResult run(struct ht_ctx *c)
{
	return HcclReduce(c->send, c->recv, c->send_count, c->o->dtype,
			  c->o->op, c->o->root, c->comm, c->stream);
}

HT_TOOL(.name = "reduce_test", .sizing = HT_SIZE_SAME, .reduce = 1,
	.expect = expect, .run = run)
