/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "core/sched.h"

void ohc_sched_init(struct ohc_sched *s)
{
	memset(s, 0, sizeof(*s));
}

void ohc_sched_fini(struct ohc_sched *s)
{
	free(s->xfers);
	free(s->step_end);
	free(s->scratch);
	memset(s, 0, sizeof(*s));
}

static struct ohc_xfer *sched_add(struct ohc_sched *s)
{
	if (s->status)
		return NULL;
	if (s->nxfers == s->cap) {
		unsigned cap = s->cap ? s->cap * 2 : 16;
		struct ohc_xfer *x = realloc(s->xfers, cap * sizeof(*x));

		if (!x) {
			s->status = OHC_ERR_NO_MEMORY;
			return NULL;
		}
		s->xfers = x;
		s->cap = cap;
	}
	memset(&s->xfers[s->nxfers], 0, sizeof(s->xfers[0]));
	return &s->xfers[s->nxfers++];
}

void ohc_sched_send(struct ohc_sched *s, uint32_t peer, const void *src,
		    size_t len)
{
	struct ohc_xfer *x = sched_add(s);

	if (!x)
		return;
	x->kind = OHC_XFER_SEND;
	x->peer = peer;
	x->src = src;
	x->len = len;
}

void ohc_sched_recv(struct ohc_sched *s, uint32_t peer, void *dst, size_t len)
{
	struct ohc_xfer *x = sched_add(s);

	if (!x)
		return;
	x->kind = OHC_XFER_RECV;
	x->rkind = OHC_RECV_COPY;
	x->peer = peer;
	x->dst = dst;
	x->len = len;
}

void ohc_sched_recv_reduce(struct ohc_sched *s, uint32_t peer, void *dst,
			   const void *src2, size_t len)
{
	struct ohc_xfer *x = sched_add(s);

	if (!x)
		return;
	x->kind = OHC_XFER_RECV;
	x->rkind = (src2 && src2 != dst) ? OHC_RECV_REDUCE_TO : OHC_RECV_REDUCE;
	x->peer = peer;
	x->dst = dst;
	x->src2 = src2;
	x->len = len;
}

void ohc_sched_copy(struct ohc_sched *s, void *dst, const void *src,
		    size_t len)
{
	struct ohc_xfer *x;

	if (dst == src || len == 0)
		return;
	x = sched_add(s);
	if (!x)
		return;
	x->kind = OHC_XFER_COPY;
	x->dst = dst;
	x->src = src;
	x->len = len;
}

void ohc_sched_reduce(struct ohc_sched *s, void *dst, const void *a,
		      const void *b, size_t len)
{
	struct ohc_xfer *x = sched_add(s);

	if (!x)
		return;
	x->kind = OHC_XFER_REDUCE;
	x->dst = dst;
	x->src2 = a;
	x->src = b;
	x->len = len;
}

void ohc_sched_step(struct ohc_sched *s)
{
	if (s->status)
		return;
	if (s->nsteps == s->step_cap) {
		unsigned cap = s->step_cap ? s->step_cap * 2 : 16;
		unsigned *e = realloc(s->step_end, cap * sizeof(*e));

		if (!e) {
			s->status = OHC_ERR_NO_MEMORY;
			return;
		}
		s->step_end = e;
		s->step_cap = cap;
	}
	s->step_end[s->nsteps++] = s->nxfers;
}

void *ohc_sched_scratch(struct ohc_sched *s, size_t bytes)
{
	if (s->status)
		return NULL;
	free(s->scratch);
	s->scratch = NULL;
	s->scratch_bytes = 0;
	if (posix_memalign(&s->scratch, 64, bytes ? bytes : 64)) {
		s->scratch = NULL;
		s->status = OHC_ERR_NO_MEMORY;
		return NULL;
	}
	s->scratch_bytes = bytes;
	return s->scratch;
}
