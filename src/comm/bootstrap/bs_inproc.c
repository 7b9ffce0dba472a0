/* SPDX-License-Identifier: Apache-2.0 */
/*
 * In-process endpoint (HcclCommInitAll): the thread ranks of one process
 * share a world with one inbox per rank under one mutex. A send copies
 * the message into the receiver's inbox; a receive waits on the world's
 * condition variable for a matching message, the sender leaving (its
 * endpoint released or aborted), poisoning, abort or the deadline.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "comm/bootstrap/bs_internal.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/log.h"
#include "util/time.h"

struct inproc_msg {
	struct ohc_list link;
	uint32_t src;
	uint8_t type;
	uint64_t ctx, tag;
	size_t len;
	uint8_t data[];
};

struct inproc_slot {
	struct ohc_list inbox; /* struct inproc_msg addressed to this rank */
	int gone;	       /* its endpoint was released */
	int aborted;	       /* ohc_bootstrap_abort on it */
	int saw_broken;	       /* it was told about the poisoning */
};

struct inproc_world {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC; any state change */
	uint32_t nranks;
	uint32_t live; /* endpoints not released */
	ohc_status_t broken;
	uint32_t broken_by;
	char hostid[OHC_HOSTID_MAX];
	struct inproc_slot *slots;
};

struct inproc_ep {
	struct bs_ep super;
	struct inproc_world *w;
};

static struct inproc_ep *inproc_ep_of(struct bs_ep *super)
{
	return ohc_derived_of(super, struct inproc_ep);
}

static void inbox_drain(struct inproc_slot *s)
{
	while (!ohc_list_empty(&s->inbox)) {
		struct inproc_msg *m =
			ohc_list_first(&s->inbox, struct inproc_msg, link);

		ohc_list_del(&m->link);
		free(m);
	}
}

static void world_free(struct inproc_world *w)
{
	for (uint32_t r = 0; r < w->nranks; r++)
		inbox_drain(&w->slots[r]);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w->slots);
	free(w);
}

/* Aborted, or poisoned (told once, with a log line, to the ranks that
 * did not detect it themselves). */
static ohc_status_t state_locked(struct inproc_world *w, uint32_t me,
				 const char *what)
{
	struct inproc_slot *s = &w->slots[me];

	if (s->aborted)
		return OHC_ERR_CANCELED;
	if (!w->broken)
		return OHC_OK;
	if (w->broken_by == me)
		return w->broken;
	if (!s->saw_broken) {
		s->saw_broken = 1;
		OHC_ERROR(
			OHC_SS_BOOT,
			"rank %u: bootstrap %s: rank %u failed the in-process "
			"bootstrap (%s)",
			me, what, w->broken_by, ohc_status_str(w->broken));
	}
	return OHC_ERR_REMOTE;
}

static struct inproc_msg *match_locked(struct inproc_slot *s, uint32_t src,
				       uint64_t ctx, uint8_t type, uint64_t tag)
{
	struct ohc_list *pos;

	ohc_list_for_each(pos, &s->inbox)
	{
		struct inproc_msg *m =
			ohc_container_of(pos, struct inproc_msg, link);

		if (m->src == src && m->ctx == ctx && m->type == type &&
		    m->tag == tag)
			return m;
	}
	return NULL;
}

static void timed_wait_locked(struct inproc_world *w, uint64_t deadline)
{
	uint64_t until = ohc_time_ns() + 1000000000ull;
	struct timespec ts;

	if (deadline < until)
		until = deadline;
	ts.tv_sec = (time_t)(until / 1000000000ull);
	ts.tv_nsec = (long)(until % 1000000000ull);
	pthread_cond_timedwait(&w->cond, &w->lock, &ts);
}

static ohc_status_t inproc_xfer(struct bs_ep *super, uint64_t ctx,
				struct bs_xfer *x, uint64_t deadline)
{
	struct inproc_world *w = inproc_ep_of(super)->w;
	uint32_t me = super->rank;
	uint64_t t0 = ohc_time_ns();
	ohc_status_t status;

	pthread_mutex_lock(&w->lock);
	status = state_locked(w, me, x->what);
	if (status < 0)
		goto out;
	if (x->send_to != BS_NO_RANK) {
		struct inproc_slot *dst = &w->slots[x->send_to];
		struct inproc_msg *m;

		if (dst->gone || dst->aborted) {
			OHC_ERROR(OHC_SS_BOOT,
				  "rank %u: bootstrap %s: rank %u %s", me,
				  x->what, x->send_to,
				  dst->gone ? "destroyed its bootstrap"
					    : "was aborted");
			x->culprit = x->send_to;
			status = OHC_ERR_REMOTE;
			goto out;
		}
		m = malloc(sizeof(*m) + x->send_len);
		if (!m) {
			status = OHC_ERR_NO_MEMORY;
			goto out;
		}
		m->src = me;
		m->type = x->type;
		m->ctx = ctx;
		m->tag = x->send_tag;
		m->len = x->send_len;
		if (x->send_len)
			memcpy(m->data, x->send_buf, x->send_len);
		ohc_list_add_tail(&dst->inbox, &m->link);
		pthread_cond_broadcast(&w->cond);
	}
	while (x->recv_from != BS_NO_RANK) {
		struct inproc_slot *src = &w->slots[x->recv_from];
		struct inproc_msg *m;

		status = state_locked(w, me, x->what);
		if (status < 0)
			break;
		m = match_locked(&w->slots[me], x->recv_from, ctx, x->type,
				 x->recv_tag);
		if (m) {
			if (m->len != x->recv_len) {
				OHC_ERROR(OHC_SS_BOOT,
					  "rank %u: bootstrap %s: rank %u sent "
					  "%zu bytes, %zu expected",
					  me, x->what, x->recv_from, m->len,
					  x->recv_len);
				x->culprit = x->recv_from;
				status = OHC_ERR_INVALID;
			} else if (m->len) {
				memcpy(x->recv_buf, m->data, m->len);
			}
			ohc_list_del(&m->link);
			free(m);
			break;
		}
		if (src->gone || src->aborted) {
			OHC_ERROR(OHC_SS_BOOT,
				  "rank %u: bootstrap %s: rank %u %s before "
				  "sending",
				  me, x->what, x->recv_from,
				  src->gone ? "destroyed its bootstrap"
					    : "was aborted");
			x->culprit = x->recv_from;
			status = OHC_ERR_REMOTE;
			break;
		}
		if (ohc_deadline_passed(deadline)) {
			OHC_ERROR(
				OHC_SS_BOOT,
				"rank %u: bootstrap %s timed out after %" PRIu64
				" ms waiting for rank %u",
				me, x->what, bs_ms_since(t0), x->recv_from);
			x->culprit = x->recv_from;
			status = OHC_ERR_TIMEOUT;
			break;
		}
		timed_wait_locked(w, deadline);
	}
out:
	pthread_mutex_unlock(&w->lock);
	return status;
}

static void inproc_fail(struct bs_ep *super, ohc_status_t why, uint32_t culprit)
{
	struct inproc_world *w = inproc_ep_of(super)->w;

	(void)culprit;
	pthread_mutex_lock(&w->lock);
	if (!w->broken) {
		w->broken = why;
		w->broken_by = super->rank;
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
}

static void inproc_abort(struct bs_ep *super)
{
	struct inproc_world *w = inproc_ep_of(super)->w;

	pthread_mutex_lock(&w->lock);
	w->slots[super->rank].aborted = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static const char *inproc_hostid(struct bs_ep *super, uint32_t rank)
{
	(void)rank;
	return inproc_ep_of(super)->w->hostid;
}

static void inproc_release(struct bs_ep *super)
{
	struct inproc_ep *ep = inproc_ep_of(super);
	struct inproc_world *w = ep->w;
	uint32_t live;

	pthread_mutex_lock(&w->lock);
	w->slots[super->rank].gone = 1;
	inbox_drain(&w->slots[super->rank]);
	live = --w->live;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	free(ep);
	if (!live)
		world_free(w);
}

static const struct bs_ep_ops inproc_ops = {
	.name = "inproc",
	.xfer = inproc_xfer,
	.fail = inproc_fail,
	.abort = inproc_abort,
	.hostid = inproc_hostid,
	.release = inproc_release,
};

ohc_status_t ohc_bootstrap_inproc_create(uint32_t nranks,
					 struct ohc_bootstrap **bss)
{
	uint64_t timeout_ms = (uint64_t)ohc_env()->connect_timeout_s * 1000;
	struct inproc_world *w;
	struct inproc_ep **eps;
	pthread_condattr_t ca;
	ohc_status_t status;
	uint32_t r;

	if (!bss) {
		OHC_ERROR(OHC_SS_BOOT, "in-process bootstrap: bss is NULL");
		return OHC_ERR_NULL;
	}
	if (nranks == 0 || nranks > OHC_BOOTSTRAP_MAX_RANKS) {
		OHC_ERROR(OHC_SS_BOOT,
			  "in-process bootstrap: nranks %u is not in [1, %u]",
			  nranks, OHC_BOOTSTRAP_MAX_RANKS);
		return OHC_ERR_INVALID;
	}
	w = calloc(1, sizeof(*w));
	eps = calloc(nranks, sizeof(*eps));
	if (w)
		w->slots = calloc(nranks, sizeof(*w->slots));
	if (!w || !eps || !w->slots) {
		status = OHC_ERR_NO_MEMORY;
		goto err_free;
	}
	status = ohc_hostid_get(w->hostid, sizeof(w->hostid));
	if (status < 0)
		goto err_free;
	for (r = 0; r < nranks; r++) {
		eps[r] = calloc(1, sizeof(*eps[r]));
		if (!eps[r]) {
			status = OHC_ERR_NO_MEMORY;
			goto err_free;
		}
		eps[r]->super.ops = &inproc_ops;
		eps[r]->super.rank = r;
		eps[r]->super.nranks = nranks;
		eps[r]->super.refs = 1;
		eps[r]->w = w;
		ohc_list_init(&w->slots[r].inbox);
	}
	w->nranks = nranks;
	w->live = nranks;
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);

	/* From here the world goes with its last endpoint. */
	for (r = 0; r < nranks; r++) {
		status = bs_handle_new(&eps[r]->super, timeout_ms, &bss[r]);
		if (status < 0)
			break;
	}
	if (status < 0) {
		for (uint32_t k = r + 1; k < nranks; k++)
			inproc_release(&eps[k]->super);
		for (uint32_t k = 0; k < r; k++) {
			ohc_bootstrap_destroy(bss[k]);
			bss[k] = NULL;
		}
	}
	free(eps);
	return status;

err_free:
	for (r = 0; eps && r < nranks; r++)
		free(eps[r]);
	free(eps);
	if (w)
		free(w->slots);
	free(w);
	return status;
}
