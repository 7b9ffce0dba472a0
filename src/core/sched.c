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

static __thread void *offer;
static __thread size_t offer_bytes;

void ohc_sched_offer(void *mem, size_t bytes)
{
	offer = mem;
	offer_bytes = bytes;
}

void *ohc_sched_offer_end(void)
{
	void *mem = offer;

	offer = NULL;
	offer_bytes = 0;
	return mem;
}

void *ohc_sched_scratch(struct ohc_sched *s, size_t bytes)
{
	if (s->status)
		return NULL;
	free(s->scratch);
	s->scratch = NULL;
	s->scratch_bytes = s->scratch_cap = 0;
	/* not for much less: a cached schedule would pin the rest */
	if (offer && offer_bytes >= bytes && bytes >= offer_bytes / 2) {
		s->scratch_cap = offer_bytes;
		s->scratch_bytes = bytes;
		s->scratch = ohc_sched_offer_end();
		return s->scratch;
	}
	if (posix_memalign(&s->scratch, 64, bytes ? bytes : 64)) {
		s->scratch = NULL;
		s->status = OHC_ERR_NO_MEMORY;
		return NULL;
	}
	s->scratch_bytes = s->scratch_cap = bytes;
	return s->scratch;
}

/* Replace s's transfers and steps by w's (scratch stays s's). */
static void sched_take(struct ohc_sched *s, struct ohc_sched *w)
{
	free(s->xfers);
	free(s->step_end);
	s->xfers = w->xfers;
	s->nxfers = w->nxfers;
	s->cap = w->cap;
	s->step_end = w->step_end;
	s->nsteps = w->nsteps;
	s->step_cap = w->step_cap;
}

/* Piece [lo, hi) of x; pointers that x does not use stay NULL. */
static void piece(struct ohc_xfer *p, const struct ohc_xfer *x, size_t lo,
		  size_t hi)
{
	*p = *x;
	if (x->src)
		p->src = (const char *)x->src + lo;
	if (x->dst)
		p->dst = (char *)x->dst + lo;
	if (x->src2)
		p->src2 = (const char *)x->src2 + lo;
	p->len = hi - lo;
}

ohc_status_t ohc_sched_pipeline(struct ohc_sched *s, uint32_t slices,
				size_t esize)
{
	struct ohc_sched w;
	unsigned k_steps = s->nsteps;

	if (s->status)
		return s->status;
	if (slices == 0 || slices > OHC_SCHED_MAX_SLICES)
		return OHC_ERR_INVALID;
	if (slices == 1 || k_steps == 0)
		return OHC_OK;
	ohc_sched_init(&w);
	for (unsigned j = 0; j < k_steps + slices - 1; j++) {
		unsigned k0 = j >= slices ? j - slices + 1 : 0;
		unsigned k1 = j < k_steps ? j : k_steps - 1;

		for (unsigned k = k0; k <= k1; k++) {
			uint32_t i = j - k;
			unsigned b = k ? s->step_end[k - 1] : 0;

			for (unsigned t = b; t < s->step_end[k]; t++) {
				const struct ohc_xfer *x = &s->xfers[t];
				struct ohc_xfer *p;
				size_t lo, hi;

				if (x->len == 0) {
					lo = hi = 0;
					if (i != 0)
						continue;
				} else {
					ohc_sched_slice(x->len, esize, slices,
							i, &lo, &hi);
					if (lo == hi)
						continue;
				}
				p = sched_add(&w);
				if (p)
					piece(p, x, lo, hi);
			}
		}
		ohc_sched_step(&w);
	}
	if (w.status) {
		s->status = w.status;
		ohc_sched_fini(&w);
		return s->status;
	}
	sched_take(s, &w);
	return OHC_OK;
}

/* Where the empty agreement messages are "received": nothing is written. */
static char agree_sink[1];

void ohc_sched_weave_agreement(struct ohc_sched *s, uint32_t rank,
			       uint32_t nranks, bool at_once)
{
	struct ohc_sched w;
	unsigned rounds = 1, nsteps;

	if (s->status || nranks < 2)
		return;
	for (uint32_t d = 1; d < nranks && !at_once; d <<= 1)
		rounds++;
	nsteps = s->nsteps > rounds ? s->nsteps : rounds;
	ohc_sched_init(&w);
	for (unsigned i = 0, begin = 0; i < nsteps; i++) {
		unsigned end = i < s->nsteps ? s->step_end[i] : begin;

		for (unsigned j = begin; j < end; j++) {
			struct ohc_xfer *x = sched_add(&w);

			if (x)
				*x = s->xfers[j];
		}
		begin = end;
		if (i < rounds) {
			/* distance 1, then 2^(i-1); at once: every distance */
			uint32_t first = i ? (1u << (i - 1)) % nranks : 1;
			uint32_t last = at_once ? nranks - 1 : first;

			for (uint32_t d = first; d <= last; d++) {
				ohc_sched_send(&w, (rank + d) % nranks,
					       agree_sink, 0);
				ohc_sched_recv(&w, (rank + nranks - d) % nranks,
					       agree_sink, 0);
			}
		}
		ohc_sched_step(&w);
	}
	if (w.status) {
		s->status = w.status;
		ohc_sched_fini(&w);
		return;
	}
	sched_take(s, &w);
}
