/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TRANSPORT_VERBS_VX_WRAP_H
#define OHC_TRANSPORT_VERBS_VX_WRAP_H

/*
 * The one seam between OpenHCCL and libibverbs: every ibv_* call of the
 * verbs transport goes through these functions (vx_wrap.c is the only file
 * that calls libibverbs). They keep the libibverbs conventions (NULL or a
 * positive errno / -1 with errno set), log the failing call at DEBUG (the
 * caller logs the error once, with its context), and host the fault
 * injection used by unit tests: fail the n-th future call of a kind with a
 * given errno, or force a QP into the error state.
 */
#include <infiniband/verbs.h>

enum ohc_vx_call {
	OHC_VX_GET_DEVICE_LIST,
	OHC_VX_OPEN_DEVICE,
	OHC_VX_ALLOC_PD,
	OHC_VX_REG_MR,
	OHC_VX_CREATE_CHANNEL,
	OHC_VX_CREATE_CQ,
	OHC_VX_RESIZE_CQ,
	OHC_VX_CREATE_QP,
	OHC_VX_MODIFY_QP,
	OHC_VX_POST_SEND,
	OHC_VX_POST_RECV,
	OHC_VX_CALL_COUNT,
};

/* Fault injection (tests): the call of kind `call` that comes after `skip`
 * more successful ones fails with errno err (err 0 disarms). Per process.
 * With OHC_VX_POST_SEND, err OHC_VX_FAULT_QP_ERR instead moves that post's
 * QP to the error state first (as a fatal QP error would), so the post
 * succeeds and its WRs complete with IBV_WC_WR_FLUSH_ERR. */
#define OHC_VX_FAULT_QP_ERR (-1)
void ohc_vx_fault_arm(enum ohc_vx_call call, unsigned skip, int err);
void ohc_vx_fault_clear(void);
/* Move qp to IBV_QPS_ERR as a fatal error would: 0 or an errno. */
int ohc_vx_fault_qp_error(struct ibv_qp *qp);
/* A peer that lies (tests): fn sees every WR list before it is posted
 * and may change it (NULL disarms). Per process. */
void ohc_vx_fault_mutate(void (*fn)(struct ibv_send_wr *wr));

struct ibv_device **ohc_vx_get_device_list(int *n_p);
void ohc_vx_free_device_list(struct ibv_device **list);
const char *ohc_vx_device_name(struct ibv_device *dev);
struct ibv_context *ohc_vx_open_device(struct ibv_device *dev);
int ohc_vx_close_device(struct ibv_context *ctx);
int ohc_vx_query_device(struct ibv_context *ctx, struct ibv_device_attr *a);
int ohc_vx_query_port(struct ibv_context *ctx, uint8_t port,
		      struct ibv_port_attr *a);
int ohc_vx_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
			struct ibv_gid_entry *entry);

struct ibv_pd *ohc_vx_alloc_pd(struct ibv_context *ctx);
int ohc_vx_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *ohc_vx_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			     int access);
int ohc_vx_dereg_mr(struct ibv_mr *mr);
/* MRs registered through the wrapper and not yet deregistered (tests). */
long ohc_vx_mr_live(void);

struct ibv_comp_channel *ohc_vx_create_channel(struct ibv_context *ctx);
int ohc_vx_destroy_channel(struct ibv_comp_channel *ch);
struct ibv_cq *ohc_vx_create_cq(struct ibv_context *ctx, int cqe,
				struct ibv_comp_channel *ch);
int ohc_vx_destroy_cq(struct ibv_cq *cq);
/* Grow the CQ to at least cqe entries: 0 or -1 with errno. */
int ohc_vx_resize_cq(struct ibv_cq *cq, int cqe);
int ohc_vx_req_notify_cq(struct ibv_cq *cq);
int ohc_vx_get_cq_event(struct ibv_comp_channel *ch);
void ohc_vx_ack_cq_events(struct ibv_cq *cq, unsigned n);
int ohc_vx_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);

struct ibv_qp *ohc_vx_create_qp(struct ibv_pd *pd,
				struct ibv_qp_init_attr *attr);
int ohc_vx_destroy_qp(struct ibv_qp *qp);
/* QPs created through the wrapper and not yet destroyed (tests). */
long ohc_vx_qp_live(void);
int ohc_vx_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int ohc_vx_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr);
int ohc_vx_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr);

/* Async events: 1 and *ev filled, 0 if none pending, -1 on error. */
int ohc_vx_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev);
void ohc_vx_ack_async_event(struct ibv_async_event *ev);

const char *ohc_vx_wc_status_str(enum ibv_wc_status st);
const char *ohc_vx_event_str(enum ibv_event_type t);

#endif
