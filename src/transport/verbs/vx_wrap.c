/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every libibverbs call of the verbs transport, in one place: the seam for
 * fault injection in tests, and the one spot that logs what libibverbs
 * said (at DEBUG; the caller reports the failure once, with context).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <string.h>

#include "transport/verbs/vx_wrap.h"
#include "util/log.h"

static const char *const call_names[OHC_VX_CALL_COUNT] = {
	[OHC_VX_GET_DEVICE_LIST] = "ibv_get_device_list",
	[OHC_VX_OPEN_DEVICE] = "ibv_open_device",
	[OHC_VX_ALLOC_PD] = "ibv_alloc_pd",
	[OHC_VX_REG_MR] = "ibv_reg_mr",
	[OHC_VX_CREATE_CHANNEL] = "ibv_create_comp_channel",
	[OHC_VX_CREATE_CQ] = "ibv_create_cq",
	[OHC_VX_RESIZE_CQ] = "ibv_resize_cq",
	[OHC_VX_CREATE_QP] = "ibv_create_qp",
	[OHC_VX_MODIFY_QP] = "ibv_modify_qp",
	[OHC_VX_POST_SEND] = "ibv_post_send",
	[OHC_VX_POST_RECV] = "ibv_post_recv",
};

/* Armed faults; tests arm them from one thread before the calls happen. */
static struct {
	int err;
	unsigned skip;
} faults[OHC_VX_CALL_COUNT];

void ohc_vx_fault_arm(enum ohc_vx_call call, unsigned skip, int err)
{
	if ((unsigned)call >= OHC_VX_CALL_COUNT)
		return;
	__atomic_store_n(&faults[call].skip, skip, __ATOMIC_RELAXED);
	__atomic_store_n(&faults[call].err, err, __ATOMIC_RELEASE);
}

void ohc_vx_fault_clear(void)
{
	for (unsigned i = 0; i < OHC_VX_CALL_COUNT; i++)
		ohc_vx_fault_arm((enum ohc_vx_call)i, 0, 0);
}

/* 0, or the injected errno for this call (consumes the fault). */
static int fault_hit(enum ohc_vx_call call)
{
	int err = __atomic_load_n(&faults[call].err, __ATOMIC_ACQUIRE);

	if (!err)
		return 0;
	if (faults[call].skip) {
		faults[call].skip--;
		return 0;
	}
	faults[call].err = 0;
	OHC_DEBUG(OHC_SS_VERBS, "%s: injected failure: %s", call_names[call],
		  err == OHC_VX_FAULT_QP_ERR ? "QP to error" : strerror(err));
	return err;
}

static void log_fail(const char *what, int err)
{
	OHC_DEBUG(OHC_SS_VERBS, "%s failed: %s", what, strerror(err));
}

int ohc_vx_fault_qp_error(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

struct ibv_device **ohc_vx_get_device_list(int *n_p)
{
	struct ibv_device **l;
	int err = fault_hit(OHC_VX_GET_DEVICE_LIST);

	if (err) {
		errno = err;
		return NULL;
	}
	l = ibv_get_device_list(n_p);
	if (!l)
		log_fail("ibv_get_device_list", errno);
	return l;
}

void ohc_vx_free_device_list(struct ibv_device **list)
{
	if (list)
		ibv_free_device_list(list);
}

const char *ohc_vx_device_name(struct ibv_device *dev)
{
	return ibv_get_device_name(dev);
}

struct ibv_context *ohc_vx_open_device(struct ibv_device *dev)
{
	struct ibv_context *ctx;
	int err = fault_hit(OHC_VX_OPEN_DEVICE);

	if (err) {
		errno = err;
		return NULL;
	}
	ctx = ibv_open_device(dev);
	if (!ctx)
		log_fail("ibv_open_device", errno);
	return ctx;
}

int ohc_vx_close_device(struct ibv_context *ctx)
{
	return ibv_close_device(ctx);
}

int ohc_vx_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
	int rc = ibv_query_device(ctx, a);

	if (rc)
		log_fail("ibv_query_device", rc);
	return rc;
}

int ohc_vx_query_port(struct ibv_context *ctx, uint8_t port,
		      struct ibv_port_attr *a)
{
	int rc = ibv_query_port(ctx, port, a);

	if (rc)
		log_fail("ibv_query_port", rc);
	return rc;
}

int ohc_vx_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
			struct ibv_gid_entry *entry)
{
	return ibv_query_gid_ex(ctx, port, index, entry, 0);
}

struct ibv_pd *ohc_vx_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd;
	int err = fault_hit(OHC_VX_ALLOC_PD);

	if (err) {
		errno = err;
		return NULL;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		log_fail("ibv_alloc_pd", errno);
	return pd;
}

int ohc_vx_dealloc_pd(struct ibv_pd *pd)
{
	return ibv_dealloc_pd(pd);
}

static long live_qps; /* QPs created and not yet destroyed */
static long live_mrs; /* registered, not yet deregistered */

struct ibv_mr *ohc_vx_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			     int access)
{
	struct ibv_mr *mr;
	int err = fault_hit(OHC_VX_REG_MR);

	if (err) {
		errno = err;
		return NULL;
	}
	mr = ibv_reg_mr(pd, addr, len, access);
	if (!mr)
		log_fail("ibv_reg_mr", errno);
	else
		__atomic_add_fetch(&live_mrs, 1, __ATOMIC_RELAXED);
	return mr;
}

int ohc_vx_dereg_mr(struct ibv_mr *mr)
{
	int rc = ibv_dereg_mr(mr);

	if (!rc)
		__atomic_sub_fetch(&live_mrs, 1, __ATOMIC_RELAXED);
	return rc;
}

long ohc_vx_mr_live(void)
{
	return __atomic_load_n(&live_mrs, __ATOMIC_RELAXED);
}

struct ibv_comp_channel *ohc_vx_create_channel(struct ibv_context *ctx)
{
	struct ibv_comp_channel *ch;
	int err = fault_hit(OHC_VX_CREATE_CHANNEL);

	if (err) {
		errno = err;
		return NULL;
	}
	ch = ibv_create_comp_channel(ctx);
	if (!ch)
		log_fail("ibv_create_comp_channel", errno);
	return ch;
}

int ohc_vx_destroy_channel(struct ibv_comp_channel *ch)
{
	return ibv_destroy_comp_channel(ch);
}

struct ibv_cq *ohc_vx_create_cq(struct ibv_context *ctx, int cqe,
				struct ibv_comp_channel *ch)
{
	struct ibv_cq *cq;
	int err = fault_hit(OHC_VX_CREATE_CQ);

	if (err) {
		errno = err;
		return NULL;
	}
	cq = ibv_create_cq(ctx, cqe, NULL, ch, 0);
	if (!cq)
		log_fail("ibv_create_cq", errno);
	return cq;
}

int ohc_vx_destroy_cq(struct ibv_cq *cq)
{
	return ibv_destroy_cq(cq);
}

int ohc_vx_resize_cq(struct ibv_cq *cq, int cqe)
{
	int rc = fault_hit(OHC_VX_RESIZE_CQ);

	if (!rc)
		rc = ibv_resize_cq(cq, cqe);
	if (rc) {
		log_fail("ibv_resize_cq", rc);
		errno = rc;
		return -1;
	}
	return 0;
}

int ohc_vx_req_notify_cq(struct ibv_cq *cq)
{
	return ibv_req_notify_cq(cq, 0);
}

int ohc_vx_get_cq_event(struct ibv_comp_channel *ch)
{
	struct ibv_cq *cq;
	void *ctx;

	return ibv_get_cq_event(ch, &cq, &ctx);
}

void ohc_vx_ack_cq_events(struct ibv_cq *cq, unsigned n)
{
	if (n)
		ibv_ack_cq_events(cq, n);
}

int ohc_vx_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	return ibv_poll_cq(cq, n, wc);
}

struct ibv_qp *ohc_vx_create_qp(struct ibv_pd *pd,
				struct ibv_qp_init_attr *attr)
{
	struct ibv_qp *qp;
	int err = fault_hit(OHC_VX_CREATE_QP);

	if (err) {
		errno = err;
		return NULL;
	}
	qp = ibv_create_qp(pd, attr);
	if (!qp)
		log_fail("ibv_create_qp", errno);
	else
		__atomic_add_fetch(&live_qps, 1, __ATOMIC_RELAXED);
	return qp;
}

int ohc_vx_destroy_qp(struct ibv_qp *qp)
{
	int rc = ibv_destroy_qp(qp);

	if (!rc)
		__atomic_sub_fetch(&live_qps, 1, __ATOMIC_RELAXED);
	return rc;
}

long ohc_vx_qp_live(void)
{
	return __atomic_load_n(&live_qps, __ATOMIC_RELAXED);
}

int ohc_vx_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	int rc = fault_hit(OHC_VX_MODIFY_QP);

	if (!rc)
		rc = ibv_modify_qp(qp, attr, mask);
	if (rc)
		log_fail("ibv_modify_qp", rc);
	return rc;
}

static void (*fault_mutator)(struct ibv_send_wr *wr); /* atomic */

void ohc_vx_fault_mutate(void (*fn)(struct ibv_send_wr *wr))
{
	__atomic_store_n(&fault_mutator, fn, __ATOMIC_RELEASE);
}

int ohc_vx_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	void (*mutate)(struct ibv_send_wr *) =
		__atomic_load_n(&fault_mutator, __ATOMIC_ACQUIRE);
	struct ibv_send_wr *bad;
	int rc = fault_hit(OHC_VX_POST_SEND);

	if (mutate)
		mutate(wr);

	if (rc == OHC_VX_FAULT_QP_ERR) /* the QP breaks under this post */
		rc = ohc_vx_fault_qp_error(qp);
	if (!rc)
		rc = ibv_post_send(qp, wr, &bad);
	if (rc)
		log_fail("ibv_post_send", rc);
	return rc;
}

int ohc_vx_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr)
{
	struct ibv_recv_wr *bad;
	int rc = fault_hit(OHC_VX_POST_RECV);

	if (!rc)
		rc = ibv_post_recv(qp, wr, &bad);
	if (rc)
		log_fail("ibv_post_recv", rc);
	return rc;
}

int ohc_vx_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	struct pollfd p = {.fd = ctx->async_fd, .events = POLLIN};

	if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN))
		return 0;
	if (ibv_get_async_event(ctx, ev))
		return -1;
	return 1;
}

void ohc_vx_ack_async_event(struct ibv_async_event *ev)
{
	ibv_ack_async_event(ev);
}

const char *ohc_vx_wc_status_str(enum ibv_wc_status st)
{
	return ibv_wc_status_str(st);
}

const char *ohc_vx_event_str(enum ibv_event_type t)
{
	return ibv_event_type_str(t);
}
