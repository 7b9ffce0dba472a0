/* SPDX-License-Identifier: Apache-2.0 */
/* Broadcast (in place): every rank ends with the root's pattern. */
#include "hccl_test.h"

static double expect(const struct ht_ctx *c, uint64_t i)
{
	return ht_pattern((int)c->o->root, i);
}

static HcclResult run(struct ht_ctx *c)
{
	return HcclBroadcast(c->send, c->send_count, c->o->dtype, c->o->root,
			     c->comm, c->stream);
}

HT_TOOL(.name = "broadcast_test", .sizing = HT_SIZE_SAME, .in_place = 1,
	.input = ht_input_root, .expect = expect, .run = run)
