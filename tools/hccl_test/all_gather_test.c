/* SPDX-License-Identifier: Apache-2.0 */
/* AllGather: block j of every output is rank j's pattern. */
#include "hccl_test.h"

static HcclResult run(struct ht_ctx *c)
{
	return HcclAllGather(c->send, c->recv, c->send_count, c->o->dtype,
			     c->comm, c->stream);
}

HT_TOOL(.name = "all_gather_test", .sizing = HT_SIZE_GATHER, .run = run)
