/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HcclCommWorkingDevNicSet: move ranks' RDMA traffic between their primary
 * NIC (rank table device_ip) and their backup NIC (backup_device_ip).
 *
 * A verbs iface is bound to one device and connects once (its CQ is sized
 * for its eps, its setup listener closes afterwards; the new one connects
 * every ep before the swap, also where a communicator's eps otherwise
 * connect on first use, OPENHCCL_RDMA_LAZY_RANKS), so a switch builds a
 * whole new verbs layer through the ordinary open / address / connect
 * path: every rank with verbs links opens a new verbs iface (on its backup
 * device if it now uses the backup, else on its primary one), the blobs go
 * round the bootstrap, every verbs pair gets new QPs, and only when every
 * rank connected are the eps swapped and the old ones quiesced (both ends,
 * then a barrier) and freed. Pairs between unswitched ranks get new QPs on
 * the same devices: one reconnect, for a rare management call, instead of
 * a second verbs iface per rank and a per-pair protocol. shm and self
 * links are untouched. Any failure before the swap leaves every rank as
 * it was.
 *
 * Rounds (bootstrap allgathers): 1. each rank's verdict on its arguments
 * and the arrays themselves, compared; 2. the new ifaces' blobs (or the
 * open error); 3. the connect results; 4. a barrier after quiescing.
 */
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "util/config.h"
#include "util/log.h"
#include "util/time.h"
#include "zerocopy/zc.h"

/* Round 1: verdict and requested state per rank (0 keep, 1 primary,
 * 2 backup), nranks bytes after the header. */
struct nic_vote {
	int32_t status;
	uint32_t has_verbs;
	uint8_t want[];
};

/* Round 2: the new verbs iface's blob, or why it did not open. */
struct nic_addr {
	int32_t status;
	uint16_t len;
	uint8_t blob[OHC_ADDR_MAX];
};

static struct ohc_iface *comm_verbs_iface(struct ohc_comm *comm,
					  unsigned *idx_p)
{
	for (unsigned i = 0; i < comm->nifaces; i++) {
		if (comm->ifaces[i]->ops->caps & OHC_TP_CAP_NIC) {
			*idx_p = i;
			return comm->ifaces[i];
		}
	}
	return NULL;
}

/* Local checks of the arguments; fills want. */
static ohc_status_t nic_check(struct ohc_comm *comm, const uint32_t *ranks,
			      const bool *backup, uint32_t n, uint8_t *want)
{
	uint32_t me = comm->rank;

	if (n == 0 || n > comm->nranks) {
		OHC_ERROR(OHC_SS_API,
			  "rank %u: HcclCommWorkingDevNicSet: nRanks %u must "
			  "be 1..%u (the communicator's size)",
			  me, n, comm->nranks);
		return OHC_ERR_INVALID;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (ranks[i] >= comm->nranks) {
			OHC_ERROR(OHC_SS_API,
				  "rank %u: HcclCommWorkingDevNicSet: "
				  "ranks[%u] = %u is not a rank of '%s' (%u "
				  "ranks)",
				  me, i, ranks[i], comm->name, comm->nranks);
			return OHC_ERR_INVALID;
		}
		if (want[ranks[i]]) {
			OHC_ERROR(OHC_SS_API,
				  "rank %u: HcclCommWorkingDevNicSet: "
				  "ranks[%u] = %u is listed twice",
				  me, i, ranks[i]);
			return OHC_ERR_INVALID;
		}
		want[ranks[i]] = backup[i] ? 2 : 1;
	}
	if (want[me] == 2 && !comm->cfg.backup_ip[0]) {
		OHC_ERROR(OHC_SS_API,
			  "rank %u: HcclCommWorkingDevNicSet: rank %u has no "
			  "backup NIC (no backup_device_ip in the rank table)",
			  me, me);
		return OHC_ERR_INVALID;
	}
	return OHC_OK;
}

/* Round 1 on every rank: the same verdict everywhere. */
static ohc_status_t nic_agree(struct ohc_comm *comm, struct nic_vote *mine,
			      char *votes, size_t vlen, int *any_verbs_p)
{
	ohc_status_t status;

	status = ohc_bootstrap_allgather(comm->bs, votes, vlen);
	if (status < 0)
		return status;
	if (mine->status < 0)
		return mine->status;
	*any_verbs_p = 0;
	for (uint32_t r = 0; r < comm->nranks; r++) {
		const struct nic_vote *v = (void *)(votes + r * vlen);

		*any_verbs_p |= v->has_verbs != 0;
		if (v->status < 0) {
			OHC_ERROR(OHC_SS_API,
				  "rank %u: HcclCommWorkingDevNicSet refused "
				  "by rank %u (%s): nothing changed",
				  comm->rank, r, ohc_status_str(v->status));
			return v->status == OHC_ERR_BUSY ? OHC_ERR_BUSY
							 : OHC_ERR_INVALID;
		}
		for (uint32_t q = 0; q < comm->nranks; q++) {
			if (v->want[q] == mine->want[q])
				continue;
			OHC_ERROR(OHC_SS_API,
				  "rank %u: HcclCommWorkingDevNicSet: rank %u "
				  "passed other arrays (rank %u: %s, here: "
				  "%s): nothing changed",
				  comm->rank, r, q,
				  v->want[q] ? v->want[q] == 2 ? "backup"
							       : "primary"
					     : "not listed",
				  mine->want[q] ? mine->want[q] == 2 ? "backup"
								     : "primary"
						: "not listed");
			return OHC_ERR_INVALID;
		}
	}
	return OHC_OK;
}

/*
 * Every rank's record (ours carries our status) to every rank. When our
 * own open or connect failed (timed out, say) and a peer gave up on this
 * exchange meanwhile (its bootstrap timeout runs as long as our
 * connect's deadline), ours is the failure to report, the cause, not the
 * exchange's (seen in CI: REMOTE instead of TIMEOUT on 2 of 4 ranks).
 */
static ohc_status_t status_exchange(struct ohc_comm *comm,
				    struct nic_addr *addrs)
{
	ohc_status_t mine = addrs[comm->rank].status;
	ohc_status_t status =
		ohc_bootstrap_allgather(comm->bs, addrs, sizeof(*addrs));

	return status < 0 && mine < 0 ? mine : status;
}

/* Round 2: open the new verbs iface (old == NULL: none, send nothing). */
static ohc_status_t nic_open(struct ohc_comm *comm, struct ohc_iface *old,
			     int backup, struct ohc_iface **new_p,
			     struct nic_addr *mine)
{
	const char *ip = backup ? comm->cfg.backup_ip : comm->cfg.device_ip;
	struct ohc_transport_params params;
	struct ohc_iface *iface;
	char hostid[256];
	size_t len = OHC_ADDR_MAX;
	ohc_status_t status;

	if (!old)
		return OHC_OK;
	iface = calloc(1, old->ops->iface_size);
	if (!iface)
		return OHC_ERR_NO_MEMORY;
	iface->ops = old->ops;
	iface->rank = comm->rank;
	iface->nranks = comm->nranks;
	ohc_comm_tp_params(comm, ip, hostid, &params);
	/* every new link is tried before the swap, never on first use */
	params.connect_now = 1;
	status = iface->ops->iface_open(iface, &params);
	if (status < 0) {
		OHC_ERROR(OHC_SS_API,
			  "rank %u: HcclCommWorkingDevNicSet: cannot open the "
			  "%s NIC %s of rank %u: %s",
			  comm->rank, backup ? "backup" : "primary",
			  ip[0] ? ip : "(default)", comm->rank,
			  ohc_status_str(status));
		free(iface);
		return status == OHC_ERR_NO_MEMORY ? status : OHC_ERR_INVALID;
	}
	status = iface->ops->iface_address(iface, mine->blob, &len);
	if (status < 0) {
		iface->ops->iface_close(iface);
		free(iface);
		return status;
	}
	mine->len = (uint16_t)len;
	*new_p = iface;
	return OHC_OK;
}

/* Round 3 (local part): new eps to every verbs peer, connected. */
static ohc_status_t nic_connect(struct ohc_comm *comm, struct ohc_iface *old,
				struct ohc_iface *iface,
				const struct nic_addr *addrs,
				struct ohc_ep **neps, struct ohc_ep **list)
{
	uint64_t deadline = ohc_deadline_after_ms(
		(uint64_t)ohc_env()->connect_timeout_s * 1000);
	unsigned n = 0;
	ohc_status_t status;

	for (uint32_t r = 0; r < comm->nranks; r++) {
		const struct nic_addr *a = &addrs[r];
		struct ohc_ep *ep;

		if (!comm->eps[r] || comm->eps[r]->iface != old)
			continue;
		ep = calloc(1, iface->ops->ep_size);
		if (!ep)
			return OHC_ERR_NO_MEMORY;
		ep->iface = iface;
		ep->peer = r;
		status = a->len && a->len <= OHC_ADDR_MAX
				 ? iface->ops->ep_init(iface, ep, r, a->blob,
						       a->len)
				 : OHC_ERR_INVALID;
		if (status < 0) {
			OHC_ERROR(OHC_SS_API,
				  "rank %u: HcclCommWorkingDevNicSet: cannot "
				  "set up the new endpoint to rank %u: %s",
				  comm->rank, r, ohc_status_str(status));
			free(ep);
			return status;
		}
		neps[r] = ep;
		list[n++] = ep;
	}
	return iface->ops->iface_connect(iface, list, n, deadline);
}

static void nic_drop(struct ohc_comm *comm, struct ohc_iface *iface,
		     struct ohc_ep **neps)
{
	for (uint32_t r = 0; neps && r < comm->nranks; r++) {
		if (!neps[r])
			continue;
		neps[r]->iface->ops->ep_fini(neps[r]);
		free(neps[r]);
		neps[r] = NULL;
	}
	if (iface) {
		iface->ops->iface_close(iface);
		free(iface);
	}
}

/* Everything agreed and connected: swap, quiesce, barrier, free. */
static ohc_status_t nic_swap(struct ohc_comm *comm, unsigned idx,
			     struct ohc_iface *iface, struct ohc_ep **neps)
{
	struct ohc_iface *old = comm->ifaces[idx];
	ohc_status_t status;

	for (uint32_t r = 0; r < comm->nranks; r++) {
		struct ohc_ep *o = comm->eps[r];

		if (!neps[r])
			continue;
		comm->eps[r] = neps[r];
		neps[r] = o;
		o->iface->ops->ep_quiesce(o);
	}
	comm->ifaces[idx] = iface;
	/* our old QPs stay until every peer's last writes to them landed */
	status = ohc_bootstrap_barrier(comm->bs);
	nic_drop(comm, old, neps);
	return status;
}

ohc_status_t ohc_comm_nic_set(struct ohc_comm *comm, const uint32_t *ranks,
			      const bool *backup, uint32_t n)
{
	size_t vlen = (sizeof(struct nic_vote) + comm->nranks + 7) & ~(size_t)7;
	struct ohc_iface *old, *iface = NULL;
	struct ohc_ep **neps = NULL, **list = NULL;
	struct nic_addr *addrs = NULL;
	struct nic_vote *mine;
	char *votes;
	uint32_t me = comm->rank, nchanged = 0;
	unsigned idx = 0;
	int any_verbs = 0, failed, locked;
	ohc_status_t status;
	int32_t res;

	votes = calloc(comm->nranks, vlen);
	addrs = calloc(comm->nranks, sizeof(*addrs));
	neps = calloc(comm->nranks, sizeof(*neps));
	list = calloc(comm->nranks, sizeof(*list));
	if (!comm->on_backup)
		comm->on_backup = calloc(comm->nranks, 1);
	if (!votes || !addrs || !neps || !list || !comm->on_backup) {
		status = OHC_ERR_NO_MEMORY;
		goto out_free;
	}
	mine = (void *)(votes + me * vlen);

	/*
	 * No operation runs while we hold exec_lock. One that runs holds it
	 * and may wait for peers that are in this call: never block on it.
	 */
	locked = !__atomic_load_n(&comm->inflight, __ATOMIC_ACQUIRE) &&
		 pthread_mutex_trylock(&comm->exec_lock) == 0;
	old = comm_verbs_iface(comm, &idx);
	mine->has_verbs = old != NULL;
	mine->status = nic_check(comm, ranks, backup, n, mine->want);
	failed = __atomic_load_n(&comm->failed, __ATOMIC_ACQUIRE);
	if (mine->status == OHC_OK &&
	    (!locked || __atomic_load_n(&comm->inflight, __ATOMIC_ACQUIRE))) {
		OHC_ERROR(OHC_SS_API,
			  "rank %u: HcclCommWorkingDevNicSet on '%s': "
			  "operations in flight; synchronize the streams "
			  "first",
			  me, comm->name);
		mine->status = OHC_ERR_BUSY;
	} else if (mine->status == OHC_OK && failed) {
		OHC_ERROR(OHC_SS_API,
			  "rank %u: HcclCommWorkingDevNicSet on '%s': the "
			  "communicator failed earlier (%s)",
			  me, comm->name, ohc_status_str(failed));
		mine->status = OHC_ERR_INVALID;
	} else if (mine->status == OHC_OK && old && ohc_zc_iface_users(old)) {
		OHC_ERROR(OHC_SS_API,
			  "rank %u: HcclCommWorkingDevNicSet on '%s': "
			  "exported memory is registered with the RDMA device; "
			  "deactivate it (and deregister windows) first",
			  me, comm->name);
		mine->status = OHC_ERR_INVALID;
	}
	status = nic_agree(comm, mine, votes, vlen, &any_verbs);
	if (status < 0)
		goto out;
	for (uint32_t r = 0; r < comm->nranks; r++)
		nchanged += mine->want[r] &&
			    (mine->want[r] == 2) != comm->on_backup[r];
	if (!any_verbs) {
		OHC_WARN(OHC_SS_API,
			 "rank %u: HcclCommWorkingDevNicSet on '%s': no RDMA "
			 "links, nothing to switch",
			 me, comm->name);
		goto out_state;
	}
	if (!nchanged)
		goto out;

	/* round 2: new ifaces and their blobs */
	addrs[me].status = nic_open(comm, old,
				    mine->want[me] ? mine->want[me] == 2
						   : comm->on_backup[me],
				    &iface, &addrs[me]);
	status = status_exchange(comm, addrs);
	for (uint32_t r = 0; status == OHC_OK && r < comm->nranks; r++) {
		if (addrs[r].status >= 0)
			continue;
		status = r == me ? addrs[r].status : OHC_ERR_INVALID;
		if (r != me)
			OHC_ERROR(OHC_SS_API,
				  "rank %u: HcclCommWorkingDevNicSet: rank %u "
				  "cannot open its new NIC: nothing changed",
				  me, r);
	}
	if (status < 0)
		goto out_drop;

	/* round 3: connect, and swap only if every rank connected */
	res = iface ? nic_connect(comm, old, iface, addrs, neps, list) : OHC_OK;
	memset(addrs, 0, comm->nranks * sizeof(*addrs));
	addrs[me].status = res;
	status = status_exchange(comm, addrs);
	for (uint32_t r = 0; status == OHC_OK && r < comm->nranks; r++) {
		if (addrs[r].status >= 0)
			continue;
		status = addrs[r].status;
		OHC_ERROR(OHC_SS_API,
			  "rank %u: HcclCommWorkingDevNicSet: rank %u could "
			  "not connect on its new NIC (%s): nothing changed",
			  me, r, ohc_status_str(addrs[r].status));
	}
	if (status < 0)
		goto out_drop;
	status = iface ? nic_swap(comm, idx, iface, neps)
		       : ohc_bootstrap_barrier(comm->bs);
	iface = NULL;
	if (status == OHC_OK)
		OHC_INFO(OHC_SS_INIT,
			 "rank %u: '%s' switched %u rank(s) between NICs; "
			 "this rank uses its %s NIC",
			 me, comm->name, nchanged,
			 (mine->want[me] ? mine->want[me] == 2
					 : comm->on_backup[me])
				 ? "backup"
				 : "primary");
out_state:
	for (uint32_t r = 0; r < comm->nranks; r++)
		if (mine->want[r])
			comm->on_backup[r] = mine->want[r] == 2;
	goto out;
out_drop:
	nic_drop(comm, iface, neps);
out:
	if (locked)
		pthread_mutex_unlock(&comm->exec_lock);
out_free:
	free(votes);
	free(addrs);
	free(neps);
	free(list);
	return status;
}
