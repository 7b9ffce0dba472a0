/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs transport's QPs: creation and the state changes (INIT, RTR,
 * RTS) that connection setup and replay make, and the test seam that
 * moves them to the error state. Under the iface's lock once connected.
 */
#include <errno.h>
#include <string.h>

#include "transport/verbs/verbs.h"
#include "util/compiler.h"
#include "util/log.h"

ohc_status_t ohc_vx_qp_create(struct ohc_verbs_iface *vi,
			      struct ohc_verbs_ep *e, uint32_t qpi)
{
	uint32_t rank = vi->super.rank, peer = e->super.peer;
	struct ohc_vx_qp *q = &e->qps[qpi];
	struct ibv_qp_init_attr qa;
	int rc;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = vi->cq;
	qa.recv_cq = vi->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 0;
	qa.cap.max_send_wr = vi->sq_depth;
	qa.cap.max_recv_wr = vi->rq_depth;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = OHC_VX_MAX_INLINE;
	q->qp = ohc_vx_create_qp(vi->pd, &qa);
	if (!q->qp && errno == EINVAL) {
		qa.cap.max_inline_data = 0; /* no inline support */
		q->qp = ohc_vx_create_qp(vi->pd, &qa);
	}
	if (q->qp)
		vi->max_inline =
			OHC_MIN(vi->max_inline, qa.cap.max_inline_data);
	if (!q->qp) {
		OHC_ERROR(OHC_SS_VERBS,
			  "rank %u: cannot create QP %u to rank %u on %s: %s",
			  rank, qpi, peer, vi->dev_name, strerror(errno));
		return OHC_ERR_UNAVAILABLE;
	}
	rc = ohc_vx_qp_init(vi, e, qpi);
	if (!rc)
		rc = ohc_vx_recvs_post(vi, e, qpi);
	if (rc) {
		OHC_ERROR(OHC_SS_VERBS, "rank %u: QP %u to rank %u: INIT: %s",
			  rank, q->qp->qp_num, peer, strerror(rc));
		return OHC_ERR_UNAVAILABLE;
	}
	return OHC_OK;
}

int ohc_vx_qp_init(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		   uint32_t qpi)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = vi->port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	return ohc_vx_modify_qp(e->qps[qpi].qp, &a,
				IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					IBV_QP_ACCESS_FLAGS);
}

/* RTR towards the peer's QP qpi (rem_qpn, rem_gid, rem_mtu). */
int ohc_vx_qp_rtr(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		  uint32_t qpi, uint32_t peer_psn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = OHC_MIN(vi->mtu, (enum ibv_mtu)e->rem_mtu);
	a.dest_qp_num = e->rem_qpn[qpi];
	a.rq_psn = peer_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 24; /* 41 ms: never expected, see rq_depth */
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, e->rem_gid, 16);
	a.ah_attr.grh.sgid_index = (uint8_t)vi->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.traffic_class = (uint8_t)vi->tc;
	a.ah_attr.sl = (uint8_t)vi->sl;
	a.ah_attr.port_num = vi->port;
	return ohc_vx_modify_qp(e->qps[qpi].qp, &a,
				IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					IBV_QP_MAX_DEST_RD_ATOMIC |
					IBV_QP_MIN_RNR_TIMER);
}

int ohc_vx_qp_rts(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		  uint32_t qpi)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = (uint8_t)vi->timeout;
	a.retry_cnt = (uint8_t)vi->retry_cnt;
	a.rnr_retry = 6;
	a.sq_psn = e->psn;
	a.max_rd_atomic = 1;
	return ohc_vx_modify_qp(e->qps[qpi].qp, &a,
				IBV_QP_STATE | IBV_QP_TIMEOUT |
					IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					IBV_QP_SQ_PSN |
					IBV_QP_MAX_QP_RD_ATOMIC);
}

int ohc_verbs_ep_inject_qp_error(struct ohc_ep *ep)
{
	struct ohc_verbs_ep *e = ohc_vx_ep(ep);
	int rc = 0;

	for (uint32_t i = 0; i < e->nqps && !rc; i++)
		rc = ohc_vx_fault_qp_error(e->qps[i].qp);
	return rc;
}
