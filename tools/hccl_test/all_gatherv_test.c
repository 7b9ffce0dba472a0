/* SPDX-License-Identifier: Apache-2.0 */
/* AllGatherV with equal counts (as hccl_test), packed displacements. */
#include "hccl_test.h"

static HcclResult run(struct ht_ctx *c)
{
	ht_uniform_v(c);
	return HcclAllGatherV(c->send, c->send_count, c->recv, c->counts,
			      c->displs, c->o->dtype, c->comm, c->stream);
}

HT_TOOL(.name = "all_gatherv_test", .sizing = HT_SIZE_GATHER, .run = run)
