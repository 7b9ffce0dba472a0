/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_COMM_COMM_INT_H
#define OHC_COMM_COMM_INT_H

/*
 * Internals shared by the files that make up a communicator (comm.c,
 * comm_registry.c, comm_oppool.c, comm_exec.c); not installed, not for
 * other layers. What the rest of comm/ and the layers above use is in
 * comm.h.
 */
#include "comm/comm.h"
#include "util/status.h"

/*
 * Registry (comm_registry.c): give comm a handle and list it (create's
 * last step; OHC_ERR_NO_MEMORY leaves it unlisted), and retire its
 * handle and unlist it (destroy). Both take the registry lock.
 */
ohc_status_t ohc_comm_registry_add(struct ohc_comm *comm);
void ohc_comm_registry_remove(struct ohc_comm *comm);

/*
 * Op pool (comm_oppool.c). ohc_op_pool_take: a spare op of comm (from the
 * pool, or a new slab), or NULL (the cap is reached, or another submitter
 * is taking). ohc_op_recycle: free op or give it back to the pool; the
 * caller still holds the op's count in comm->inflight (if it took one),
 * so comm outlives the call. ohc_op_pool_deepen: map a huge slab ahead
 * of need, once (the first op queued on a stream). ohc_op_pool_fini:
 * unmap the slabs; comm is idle (no op in flight, none being submitted).
 */
struct ohc_op *ohc_op_pool_take(struct ohc_comm *comm);
void ohc_op_pool_deepen(struct ohc_comm *comm);
void ohc_op_recycle(struct ohc_comm *comm, struct ohc_op *op);
void ohc_op_pool_fini(struct ohc_comm *comm);

#endif
