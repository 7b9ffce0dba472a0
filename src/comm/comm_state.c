/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Suspend and resume (HcclCommSuspend / HcclCommResume).
 *
 * Suspend is local and quick: it marks the communicator suspended, cancels
 * what is in flight (the transports are aborted, which the peers hear
 * of, so their operations with us end too, not at their timeout) and
 * waits for those operations to end. From then on every operation fails
 * at once with OHC_ERR_SUSPENDING.
 *
 * Resume is collective. Its transports may be broken (a peer timed out,
 * a link failed, suspend aborted them), so it does not try to repair
 * them: the ranks agree over the bootstrap, which is separate from the
 * data path, then close every transport and open them anew with a new
 * session, exactly as init did. The failure, the asynchronous error and
 * the suspension are cleared only when every rank got that far.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "comm/bootstrap/bootstrap.h"
#include "comm/comm.h"
#include "util/config.h"
#include "util/log.h"
#include "util/time.h"
#include "zerocopy/zc.h"

/* How long suspend and resume wait for operations in flight to end. */
static uint64_t drain_ms(const struct ohc_comm *comm)
{
	uint64_t s = comm->cfg.exec_timeout_s ? comm->cfg.exec_timeout_s : 60;

	return s * 1000 + 1000;
}

ohc_status_t ohc_comm_suspend(struct ohc_comm *comm)
{
	__atomic_store_n(&comm->suspended, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&comm->abort_flag, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < comm->nifaces; i++)
		comm->ifaces[i]->ops->iface_abort(comm->ifaces[i],
						  OHC_ERR_SUSPENDING);
	if (ohc_comm_wait_idle(comm, drain_ms(comm)) < 0) {
		OHC_ERROR(OHC_SS_INIT,
			  "rank %u: communicator '%s' suspended, but "
			  "operations are still in flight after %" PRIu64
			  " ms (queued behind an event that never comes?)",
			  comm->rank, comm->name, drain_ms(comm));
		return OHC_ERR_BUSY;
	}
	OHC_INFO(OHC_SS_INIT, "rank %u: communicator '%s' suspended",
		 comm->rank, comm->name);
	return OHC_OK;
}

/* Why this rank cannot resume (OHC_OK: it can); logs the reason. */
static ohc_status_t resume_local_check(struct ohc_comm *comm)
{
	if (ohc_comm_wait_idle(comm, drain_ms(comm)) < 0) {
		OHC_ERROR(OHC_SS_INIT,
			  "rank %u: cannot resume '%s': operations are still "
			  "in flight",
			  comm->rank, comm->name);
		return OHC_ERR_BUSY;
	}
	for (unsigned i = 0; i < comm->nifaces; i++) {
		if (!ohc_zc_iface_users(comm->ifaces[i]))
			continue;
		OHC_ERROR(OHC_SS_INIT,
			  "rank %u: cannot resume '%s': exported memory or "
			  "symmetric windows are registered with its %s "
			  "transport (deactivate or deregister them first)",
			  comm->rank, comm->name, comm->ifaces[i]->ops->name);
		return OHC_ERR_INVALID;
	}
	return OHC_OK;
}

/* Every rank's verdict; the first failing rank's, or OHC_OK. */
static ohc_status_t resume_agree(struct ohc_comm *comm, ohc_status_t mine)
{
	uint32_t n = comm->nranks;
	int32_t *all = calloc(n, sizeof(*all));
	ohc_status_t status;

	if (!all)
		return OHC_ERR_NO_MEMORY;
	all[comm->rank] = (int32_t)mine;
	status = ohc_bootstrap_allgather(comm->bs, all, sizeof(*all));
	for (uint32_t r = 0; status == OHC_OK && r < n; r++) {
		if (all[r] == OHC_OK)
			continue;
		if (r != comm->rank)
			OHC_ERROR(OHC_SS_INIT,
				  "rank %u: resume of '%s' refused: rank %u "
				  "cannot resume (%s)",
				  comm->rank, comm->name, r,
				  ohc_status_str((ohc_status_t)all[r]));
		status = OHC_ERR_INVALID;
	}
	free(all);
	return status;
}

ohc_status_t ohc_comm_resume(struct ohc_comm *comm)
{
	uint64_t deadline, session = 0;
	ohc_status_t status;

	status = resume_agree(comm, resume_local_check(comm));
	if (status < 0)
		return status;

	pthread_mutex_lock(&comm->exec_lock);
	ohc_comm_transports_close(comm);
	free(comm->eps); /* opened anew below */
	free(comm->ep_tp);
	comm->eps = NULL;
	comm->ep_tp = NULL;
	free(comm->on_backup); /* a NIC switch is undone by reconnecting */
	comm->on_backup = NULL;
	deadline = ohc_deadline_after_ms(
		(uint64_t)ohc_env()->connect_timeout_s * 1000);
	if (comm->rank == 0 &&
	    getrandom(&session, sizeof(session), 0) != sizeof(session))
		session = ohc_time_ns() ^ ((uint64_t)getpid() << 32);
	status = ohc_bootstrap_bcast(comm->bs, &session, sizeof(session), 0);
	if (status == OHC_OK)
		status = ohc_comm_transports_open(comm, session, deadline);
	/* Everyone connected before anyone sends data. */
	if (status == OHC_OK)
		status = ohc_bootstrap_barrier(comm->bs);
	if (status == OHC_OK) {
		__atomic_store_n(&comm->async_error, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&comm->failed, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&comm->refused, 0, __ATOMIC_RELAXED);
		/* Ranks may have issued different numbers of operations
		 * before the fault: numbering starts over on all. */
		__atomic_store_n(&comm->coll_seq, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&comm->abort_flag, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&comm->suspended, 0, __ATOMIC_RELEASE);
		OHC_INFO(OHC_SS_INIT,
			 "rank %u: communicator '%s' resumed (%u transports)",
			 comm->rank, comm->name, comm->nifaces);
	} else {
		/* No transports now: the communicator stays failed. */
		ohc_comm_transports_close(comm);
		ohc_comm_fail(comm, status);
		OHC_ERROR(OHC_SS_INIT,
			  "rank %u: resume of '%s' failed (%s); destroy it",
			  comm->rank, comm->name, ohc_status_str(status));
	}
	pthread_mutex_unlock(&comm->exec_lock);
	return status;
}
