/* SPDX-License-Identifier: Apache-2.0 */
/* AlltoAllV with equal counts (as hccl_test), packed blocks both sides. */
#include "hccl_test.h"

static HcclResult run(struct ht_ctx *c)
{
	ht_uniform_v(c);
	return HcclAlltoAllV(c->send, c->counts, c->displs, c->o->dtype,
			     c->recv, c->counts, c->displs, c->o->dtype,
			     c->comm, c->stream);
}

HT_TOOL(.name = "alltoallv_test", .sizing = HT_SIZE_ALLTOALL, .run = run)
