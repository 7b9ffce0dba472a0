/* SPDX-License-Identifier: Apache-2.0 */
/* AlltoAll: block j of rank r's output is block r of rank j's pattern. */
#include "hccl_test.h"

static HcclResult run(struct ht_ctx *c)
{
	return HcclAlltoAll(c->send, c->block, c->o->dtype, c->recv, c->block,
			    c->o->dtype, c->comm, c->stream);
}

HT_TOOL(.name = "alltoall_test", .sizing = HT_SIZE_ALLTOALL, .run = run)
