/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs transport's ops table and the iface's life: open (geometry
 * and QP attributes from the environment, the device, PD, wake eventfd,
 * setup listener), close, the address blob, ep_init. Each op that runs
 * under the iface's lock is a wrapper here around a *_locked function of
 * the file that does its job (the files: src/transport/README.md).
 * See verbs.h for the protocol.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "transport/verbs/verbs.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/log.h"

/* ---- iface --------------------------------------------------------- */

static void vx_iface_close(struct ohc_iface *iface)
{
	struct ohc_verbs_iface *vi = ohc_vx_iface(iface);

	ohc_vx_service_del(vi); /* the service thread lets go of it first */
	ohc_vx_lazy_close(vi);
	if (vi->listen_fd >= 0)
		close(vi->listen_fd);
	if (vi->wake_fd >= 0)
		close(vi->wake_fd);
	ohc_vx_land_fini(vi);
	ohc_vx_mr_cache_fini(vi);
	if (vi->cq) {
		if (vi->armed && ohc_vx_get_cq_event(vi->ch) == 0)
			vi->unacked++;
		ohc_vx_ack_cq_events(vi->cq, vi->unacked);
		ohc_vx_destroy_cq(vi->cq);
	}
	if (vi->ch)
		ohc_vx_destroy_channel(vi->ch);
	if (vi->pd)
		ohc_vx_dealloc_pd(vi->pd);
	if (vi->ctx)
		ohc_vx_close_device(vi->ctx);
	free(vi->by_peer);
	free(vi->wait_fds);
	free(vi->lz_svc_fds);
	vi->lz_svc_fds = NULL;
	vi->listen_fd = vi->wake_fd = -1;
	vi->cq = NULL;
	vi->ch = NULL;
	vi->pd = NULL;
	vi->ctx = NULL;
	vi->by_peer = NULL;
	pthread_mutex_destroy(&vi->lock);
}

/*
 * Defaults that depend on who does the RDMA protocol work. On a NIC a
 * WRITE costs the CPUs nothing: pulled fragments stay off (a read would
 * only add a round trip) and large messages go by rendezvous. Under
 * Soft-RoCE and siw the poster's CPU does all of a WRITE's work (copies,
 * ICRC) and the reader's all of a READ's, so the slot path with every
 * second fragment pulled keeps both CPUs busy, and it beat the
 * rendezvous (one CPU writing) at every size from 256 KiB to 4 MiB
 * (bench/verbs_p2p.sh): there the rendezvous is off unless set.
 */
static void vx_soft_defaults(struct ohc_verbs_iface *vi)
{
	struct ibv_device_attr da;
	int soft = !ohc_vx_query_device(vi->ctx, &da) &&
		   (da.vendor_id == OHC_VX_VENDOR_RXE ||
		    da.vendor_id == OHC_VX_VENDOR_SIW);

	if (!soft && !ohc_config_is_set("OPENHCCL_RDMA_PULL_KB"))
		vi->pull_bytes = 0;
	if (soft && !ohc_config_is_set("OPENHCCL_RDMA_RNDV_KB"))
		vi->rndv_bytes = 0;
}

static ohc_status_t vx_iface_open(struct ohc_iface *iface,
				  const struct ohc_transport_params *params)
{
	struct ohc_verbs_iface *vi = ohc_vx_iface(iface);
	const struct ohc_env *env = ohc_env();
	const char *ip = NULL, *origin = NULL;
	ohc_status_t status;

	vi->listen_fd = vi->wake_fd = -1;
	pthread_mutex_init(&vi->lock, NULL);
	ohc_list_init(&vi->svc_link);
	vi->session = params->session;
	vi->connect_now = params->connect_now;
	vi->nqps = (uint32_t)env->rdma_qps_per_conn;
	vi->slots = (uint32_t)env->rdma_slots;
	/* the header on top of the payload: a message of exactly the slot
	 * size (64 KiB by default) is one fragment */
	vi->slot_bytes = (uint32_t)env->rdma_slot_kb * 1024 + OHC_VX_HDR;
	vi->max_inline = OHC_VX_MAX_INLINE;
	/* WRs per slot: a lost packet makes rxe resend everything from it to
	 * the next ACK (one per WR), and each failed round costs a retry:
	 * small writes keep that round short on a lossy link */
	vi->wr_bytes =
		env->rdma_write_kb
			? (uint32_t)OHC_MIN((uint64_t)env->rdma_write_kb * 1024,
					    vi->slot_bytes)
			: vi->slot_bytes;
	vi->wr_per_slot = (vi->slot_bytes + vi->wr_bytes - 1) / vi->wr_bytes;
	/* rendezvous stripes go in pieces of the same cap (else in pieces
	 * of 1 GiB, below rxe's largest message) */
	vi->rdv_wr_bytes = env->rdma_write_kb
				   ? (uint32_t)env->rdma_write_kb * 1024
				   : 1u << 30;
	vi->rndv_bytes = (uint32_t)env->rdma_rndv_kb * 1024;
	vi->gx_bytes = (uint32_t)env->rdma_gather_kb * 1024;
	/* one read WR per pulled fragment: not with OPENHCCL_RDMA_WRITE_KB,
	 * whose small WRs are for lossy links */
	vi->pull_bytes =
		env->rdma_write_kb
			? 0
			: (uint32_t)OHC_MIN((uint64_t)env->rdma_pull_kb * 1024,
					    UINT32_MAX);
	/* the slots' WRs, the rendezvous', a read at a time */
	vi->sq_depth = vi->slots * vi->wr_per_slot + OHC_VX_RDV_N + 16 + 1;
	/*
	 * Between two polls of ours a peer can land at most `slots` data
	 * fragments (its credits), `slots` credit messages (one per slot of
	 * ours it consumed) and per rendezvous in flight (at most
	 * OHC_VX_RDV_N each way) a CTS or a stripe, and per landing buffer
	 * of either side its chunks or their grants: keep that many
	 * receives posted at all times.
	 */
	vi->rq_depth = 2 * vi->slots + 2 * OHC_VX_RDV_N +
		       2 * OHC_VX_LAND_MAX * OHC_VX_LAND_CHUNKS + 16;
	vi->timeout = (uint32_t)env->rdma_timeout;
	vi->retry_cnt = (uint32_t)env->rdma_retry_cnt;
	vi->tc = params->rdma_tc;
	vi->sl = params->rdma_sl;
	if (vi->retry_cnt > 6) {
		static int warned;

		if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED) &&
		    ohc_config_raw("HCCL_RDMA_RETRY_CNT"))
			OHC_WARN(OHC_SS_VERBS,
				 "HCCL_RDMA_RETRY_CNT=%u capped to 6 (7 means "
				 "retry forever on Soft-RoCE)",
				 vi->retry_cnt);
		vi->retry_cnt = 6;
	}
	if (params->device_ip && params->device_ip[0]) {
		ip = params->device_ip;
		origin = params->device_ip_key ? params->device_ip_key
					       : "device_ip";
	} else if (env->if_ip[0]) {
		ip = env->if_ip;
		origin = "HCCL_IF_IP";
	}
	status = ohc_vx_dev_open(vi, ip, origin, env->rdma_device,
				 (int)env->rdma_gid_index);
	if (status < 0)
		return status;
	vx_soft_defaults(vi);
	vi->by_peer = calloc(iface->nranks, sizeof(*vi->by_peer));
	vi->wait_fds = calloc(VX_WAIT_FDS((size_t)iface->nranks),
			      sizeof(*vi->wait_fds));
	vi->lz_acc = calloc(OHC_VX_LZ_ACC_MAX, sizeof(*vi->lz_acc));
	vi->lz_svc_fds = calloc(VX_WAIT_FDS((size_t)iface->nranks),
				sizeof(*vi->lz_svc_fds));
	vi->replay_ms = (uint32_t)ohc_env()->rdma_replay_ms;
	if (!vi->by_peer || !vi->wait_fds || !vi->lz_acc || !vi->lz_svc_fds) {
		status = OHC_ERR_NO_MEMORY;
		goto err_close;
	}
	vi->pd = ohc_vx_alloc_pd(vi->ctx);
	if (vi->pd)
		ohc_vx_mr_cache_init(vi);
	if (!vi->pd) {
		OHC_ERROR(OHC_SS_VERBS, "rank %u: ibv_alloc_pd on %s: %s",
			  iface->rank, vi->dev_name, strerror(errno));
		status = OHC_ERR_UNAVAILABLE;
		goto err_close;
	}
	vi->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (vi->wake_fd < 0) {
		OHC_ERROR(OHC_SS_VERBS, "rank %u: eventfd: %s", iface->rank,
			  strerror(errno));
		status = OHC_ERR_SYSCALL;
		goto err_close;
	}
	if (ohc_vx_set_nonblock(vi->ctx->async_fd)) {
		status = OHC_ERR_SYSCALL;
		goto err_close;
	}
	status = ohc_vx_listen(vi);
	if (status < 0)
		goto err_close;
	return OHC_OK;

err_close:
	vx_iface_close(iface);
	return status;
}

static ohc_status_t vx_iface_address(struct ohc_iface *iface, void *blob,
				     size_t *len_p)
{
	struct ohc_verbs_iface *vi = ohc_vx_iface(iface);
	struct vx_blob b;

	memset(&b, 0, sizeof(b));
	b.magic = VX_BLOB_MAGIC;
	b.version = VX_VERSION;
	b.rank = iface->rank;
	b.session = vi->session;
	b.family = vi->listen_addr.ss_family;
	if (b.family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&vi->listen_addr;

		memcpy(b.addr, &a->sin_addr, 4);
		b.tcp_port = ntohs(a->sin_port);
	} else {
		struct sockaddr_in6 *a =
			(struct sockaddr_in6 *)&vi->listen_addr;

		memcpy(b.addr, &a->sin6_addr, 16);
		b.tcp_port = ntohs(a->sin6_port);
	}
	memcpy(b.gid, vi->gid.raw, 16);
	b.nqps = vi->nqps;
	b.slots = vi->slots;
	b.slot_bytes = vi->slot_bytes;
	b.rndv_bytes = vi->rndv_bytes;
	memcpy(blob, &b, sizeof(b));
	*len_p = sizeof(b);
	return OHC_OK;
}

static int blob_ok(struct ohc_verbs_iface *vi, const void *blob, size_t len,
		   struct vx_blob *b)
{
	if (len != sizeof(*b))
		return 0;
	memcpy(b, blob, sizeof(*b));
	return b->magic == VX_BLOB_MAGIC && b->version == VX_VERSION &&
	       b->session == vi->session;
}

static int vx_iface_reachable(struct ohc_iface *iface, const void *blob,
			      size_t len)
{
	struct vx_blob b;

	return blob_ok(ohc_vx_iface(iface), blob, len, &b);
}

/* ---- endpoints ----------------------------------------------------- */

static ohc_status_t vx_ep_init(struct ohc_iface *iface, struct ohc_ep *ep,
			       uint32_t peer, const void *blob, size_t len)
{
	struct ohc_verbs_iface *vi = ohc_vx_iface(iface);
	struct ohc_verbs_ep *e = ohc_vx_ep(ep);
	struct vx_blob b;

	if (!blob_ok(vi, blob, len, &b) || b.rank != peer ||
	    peer >= iface->nranks) {
		OHC_ERROR(OHC_SS_VERBS, "rank %u: bad verbs address of rank %u",
			  iface->rank, peer);
		return OHC_ERR_INVALID;
	}
	if (b.rndv_bytes != vi->rndv_bytes) {
		OHC_ERROR(OHC_SS_VERBS,
			  "rank %u: rank %u sends by rendezvous from %u bytes, "
			  "we from %u (0: never; set OPENHCCL_RDMA_RNDV_KB "
			  "alike on all ranks: unset, it is off on software "
			  "RDMA devices)",
			  iface->rank, peer, b.rndv_bytes, vi->rndv_bytes);
		return OHC_ERR_INVALID;
	}
	if (b.nqps != vi->nqps || b.slots != vi->slots ||
	    b.slot_bytes != vi->slot_bytes) {
		OHC_ERROR(OHC_SS_VERBS,
			  "rank %u: rank %u uses %u QPs x %u slots of %u "
			  "bytes, we use %u x %u of %u (set "
			  "HCCL_RDMA_QPS_PER_CONNECTION, OPENHCCL_RDMA_SLOTS, "
			  "OPENHCCL_RDMA_SLOT_KB alike on all ranks)",
			  iface->rank, peer, b.nqps, b.slots, b.slot_bytes,
			  vi->nqps, vi->slots, vi->slot_bytes);
		return OHC_ERR_INVALID;
	}
	e->peer_blob = b;
	e->sock = -1;
	e->lz_fd = -1;
	e->nqps = vi->nqps;
	ohc_list_init(&e->sendq);
	ohc_list_init(&e->recvq);
	ohc_list_init(&e->rdv.txq);
	ohc_list_init(&e->rdv.rxq);
	vi->by_peer[peer] = e;
	return OHC_OK;
}

/* ---- the ops, each under the iface's lock ------------------------- */

static unsigned vx_iface_progress(struct ohc_iface *iface)
{
	unsigned n;

	VX_LOCK(iface);
	n = ohc_vx_iface_progress_locked(iface);
	VX_UNLOCK(iface);
	return n;
}

static ohc_status_t vx_ep_send(struct ohc_ep *ep, struct ohc_req *req)
{
	ohc_status_t st;

	VX_LOCK(ep->iface);
	st = ohc_vx_ep_send_locked(ep, req);
	VX_UNLOCK(ep->iface);
	return st;
}

static ohc_status_t vx_ep_recv(struct ohc_ep *ep, struct ohc_req *req)
{
	ohc_status_t st;

	VX_LOCK(ep->iface);
	st = ohc_vx_ep_recv_locked(ep, req);
	VX_UNLOCK(ep->iface);
	return st;
}

static ohc_status_t vx_ep_check(struct ohc_ep *ep)
{
	ohc_status_t st;

	VX_LOCK(ep->iface);
	st = ohc_vx_ep_check_locked(ep);
	VX_UNLOCK(ep->iface);
	return st;
}

static void vx_ep_cancel(struct ohc_ep *ep, ohc_status_t status)
{
	VX_LOCK(ep->iface);
	ohc_vx_ep_cancel_locked(ep, status);
	VX_UNLOCK(ep->iface);
}

static void vx_iface_abort(struct ohc_iface *iface, ohc_status_t reason)
{
	VX_LOCK(iface);
	ohc_vx_iface_abort_locked(iface, reason);
	VX_UNLOCK(iface);
}

static void vx_ep_quiesce(struct ohc_ep *ep)
{
	VX_LOCK(ep->iface);
	ohc_vx_ep_quiesce_locked(ep);
	VX_UNLOCK(ep->iface);
}

static void vx_ep_fini(struct ohc_ep *ep)
{
	VX_LOCK(ep->iface);
	ohc_vx_ep_fini_locked(ep);
	VX_UNLOCK(ep->iface);
}

static ohc_status_t vx_mem_reg(struct ohc_iface *iface, void *addr, size_t len,
			       const struct ohc_mem_desc *desc, void **handle_p)
{
	ohc_status_t st;

	VX_LOCK(iface);
	st = ohc_vx_mem_reg(iface, addr, len, desc, handle_p);
	VX_UNLOCK(iface);
	return st;
}

static void vx_mem_dereg(struct ohc_iface *iface, void *handle)
{
	VX_LOCK(iface);
	ohc_vx_mem_dereg(iface, handle);
	VX_UNLOCK(iface);
}

const struct ohc_transport_ops ohc_verbs_ops = {
	.size = sizeof(struct ohc_transport_ops),
	.name = "verbs",
	.caps = OHC_TP_CAP_SAME_HOST | OHC_TP_CAP_REMOTE_HOST |
		OHC_TP_CAP_WAIT | OHC_TP_CAP_WAIT_SET | OHC_TP_CAP_NIC,
	.iface_size = sizeof(struct ohc_verbs_iface),
	.ep_size = sizeof(struct ohc_verbs_ep),
	.iface_open = vx_iface_open,
	.iface_close = vx_iface_close,
	.iface_address = vx_iface_address,
	.iface_reachable = vx_iface_reachable,
	.ep_init = vx_ep_init,
	.iface_connect = ohc_vx_iface_connect,
	.ep_quiesce = vx_ep_quiesce,
	.ep_fini = vx_ep_fini,
	.ep_send = vx_ep_send,
	.ep_recv = vx_ep_recv,
	.iface_progress = vx_iface_progress,
	.iface_wait = ohc_vx_iface_wait,
	.iface_wait_arm = ohc_vx_iface_wait_arm,
	.iface_wait_disarm = ohc_vx_iface_wait_disarm,
	.iface_wake = ohc_vx_iface_wake,
	.ep_check = vx_ep_check,
	.ep_cancel = vx_ep_cancel,
	.mem_reg = vx_mem_reg,
	.mem_dereg = vx_mem_dereg,
	.iface_abort = vx_iface_abort,
};
