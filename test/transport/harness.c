/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The transport tests' shared harness (harness.h): linked into every
 * test/transport/ executable, no test itself (test/CMakeLists.txt).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#include "helpers/ohc_test.h"
#include "transport/harness.h"
#include "transport/verbs/vx_wrap.h"
#include "util/time.h"

struct tp_shared *tp_sh;
static size_t tp_sh_bytes;

void *tp_setup(size_t extra)
{
	tp_sh_bytes = sizeof(*tp_sh) + extra;
	tp_sh = mmap(NULL, tp_sh_bytes, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert(tp_sh != MAP_FAILED);
	memset(tp_sh, 0, tp_sh_bytes);
	cr_assert_eq(getrandom(&tp_sh->session, sizeof(tp_sh->session), 0),
		     (ssize_t)sizeof(tp_sh->session));
	/* what follows is aligned as struct tp_shared (8 bytes): enough
	 * for the scalars and atomics a test keeps there */
	return tp_sh + 1;
}

void tp_teardown(void)
{
	munmap(tp_sh, tp_sh_bytes);
	tp_sh = NULL;
}

void tp_barrier(int nranks)
{
	unsigned gen = atomic_load(&tp_sh->bar_gen);

	if (atomic_fetch_add(&tp_sh->bar_count, 1) + 1 == (unsigned)nranks) {
		atomic_store(&tp_sh->bar_count, 0);
		atomic_fetch_add(&tp_sh->bar_gen, 1);
		return;
	}
	while (atomic_load(&tp_sh->bar_gen) == gen)
		usleep(200);
}

ohc_status_t tp_iface_open(struct tp_rank *c, const char *tp, int rank,
			   int nranks, const struct ohc_transport_params *p)
{
	struct ohc_transport_params q = {0};
	ohc_status_t st;

	if (p)
		q = *p;
	q.rank = (uint32_t)rank;
	q.nranks = (uint32_t)nranks;
	q.session = tp_sh->session;
	if (!q.hostid)
		q.hostid = "test-host";
	memset(c, 0, sizeof(*c));
	c->rank = rank;
	c->nranks = nranks;
	c->tp = tp;
	c->fds_before = ohc_test_count_fds();
	c->ops = ohc_transport_get(tp);
	if (!c->ops)
		return OHC_ERR_NOT_FOUND;
	c->iface = calloc(1, c->ops->iface_size);
	if (!c->iface)
		return OHC_ERR_NO_MEMORY;
	c->iface->ops = c->ops;
	c->iface->rank = q.rank;
	c->iface->nranks = q.nranks;
	st = c->ops->iface_open(c->iface, &q);
	if (st < 0) {
		free(c->iface);
		c->iface = NULL;
	}
	return st;
}

int tp_rank_open(struct tp_rank *c, const char *tp, int rank, int nranks,
		 const struct ohc_transport_params *p)
{
	ohc_status_t st = tp_iface_open(c, tp, rank, nranks, p);

	CHECK(st == OHC_OK, "iface_open of %s: %s", tp, ohc_status_str(st));
	tp_sh->blob_len[rank] = OHC_ADDR_MAX;
	CHECK(c->ops->iface_address(c->iface, tp_sh->blob[rank],
				    &tp_sh->blob_len[rank]) == OHC_OK,
	      "iface_address");
	return 0;
}

int tp_rank_eps(struct tp_rank *c, int with_self)
{
	for (int r = 0; r < c->nranks; r++) {
		if (r == c->rank && !with_self)
			continue;
		CHECK(c->ops->iface_reachable(c->iface, tp_sh->blob[r],
					      tp_sh->blob_len[r]),
		      "rank %d not reachable", r);
		c->eps[r] = calloc(1, c->ops->ep_size);
		CHECK(c->eps[r], "calloc");
		c->eps[r]->iface = c->iface;
		c->eps[r]->peer = (uint32_t)r;
		CHECK(c->ops->ep_init(c->iface, c->eps[r], (uint32_t)r,
				      tp_sh->blob[r],
				      tp_sh->blob_len[r]) == OHC_OK,
		      "ep_init %d", r);
	}
	return 0;
}

int tp_rank_connect(struct tp_rank *c, int timeout_ms)
{
	struct ohc_ep *list[TP_MAXR];
	unsigned n = 0;
	ohc_status_t st;

	for (int r = 0; r < c->nranks; r++)
		if (c->eps[r])
			list[n++] = c->eps[r];
	st = c->ops->iface_connect(c->iface, list, n,
				   ohc_deadline_after_ms((uint64_t)timeout_ms));
	CHECK(st == OHC_OK, "iface_connect: %s", ohc_status_str(st));
	return 0;
}

int tp_rank_up(struct tp_rank *c, const char *tp, int rank, int nranks,
	       const struct ohc_transport_params *p, int connect_ms)
{
	if (tp_rank_open(c, tp, rank, nranks, p))
		return 1;
	tp_barrier(nranks);
	if (tp_rank_eps(c, 0) || tp_rank_connect(c, connect_ms))
		return 1;
	return 0;
}

void tp_rank_close(struct tp_rank *c)
{
	for (int r = 0; r < TP_MAXR; r++) {
		if (!c->eps[r])
			continue;
		c->ops->ep_fini(c->eps[r]);
		free(c->eps[r]);
		c->eps[r] = NULL;
	}
	if (c->iface) {
		c->ops->iface_close(c->iface);
		free(c->iface);
		c->iface = NULL;
	}
}

int tp_rank_down(struct tp_rank *c)
{
	tp_rank_close(c);
	CHECK(ohc_test_count_fds() == c->fds_before, "fd leak: %d -> %d",
	      c->fds_before, ohc_test_count_fds());
#ifdef __SANITIZE_ADDRESS__
	CHECK(__lsan_do_recoverable_leak_check() == 0, "memory leaked");
#endif
	return 0;
}

int tp_drive(struct tp_rank *c, struct ohc_req **reqs, int n, int wait_ms,
	     int timeout_ms)
{
	uint64_t deadline = ohc_deadline_after_ms((uint64_t)timeout_ms);

	for (;;) {
		int pending = 0;
		unsigned moved = c->ops->iface_progress(c->iface);

		for (int i = 0; i < n; i++)
			pending += __atomic_load_n(&reqs[i]->status,
						   __ATOMIC_ACQUIRE) ==
				   OHC_INPROGRESS;
		if (!pending)
			return 0;
		if (ohc_deadline_passed(deadline)) {
			fprintf(stderr,
				"%s rank %d: %d requests still pending\n",
				c->tp, c->rank, pending);
			return -1;
		}
		if (!moved)
			c->ops->iface_wait(c->iface, wait_ms);
	}
}

/* Word w of the payload (src -> dst, message idx). */
static uint64_t pat_word(size_t w, int src, int dst, int idx)
{
	uint64_t seed = (uint64_t)(src + 1) * 0x9e3779b97f4a7c15ull ^
			(uint64_t)(dst + 1) * 0xc2b2ae3d27d4eb4full ^
			(uint64_t)(idx + 1) * 0x165667b19e3779f9ull;

	return ((uint64_t)w + 1) * 0xff51afd7ed558ccdull ^ seed;
}

uint8_t tp_pat(size_t i, int src, int dst, int idx)
{
	return (uint8_t)(pat_word(i / 8, src, dst, idx) >> (8 * (i % 8)));
}

/* Bytes stored least significant first whatever the host's order, so
 * tp_pat names each; the compiler makes it one store on little endian. */
static void put_word(uint8_t *b, uint64_t v)
{
	for (int k = 0; k < 8; k++)
		b[k] = (uint8_t)(v >> (8 * k));
}

void tp_fill(uint8_t *b, size_t len, int src, int dst, int idx)
{
	size_t w;

	for (w = 0; w < len / 8; w++)
		put_word(b + 8 * w, pat_word(w, src, dst, idx));
	for (size_t i = 8 * w; i < len; i++)
		b[i] = tp_pat(i, src, dst, idx);
}

long tp_verify(const uint8_t *b, size_t len, int src, int dst, int idx)
{
	size_t w;

	for (w = 0; w < len / 8; w++) {
		uint8_t want[8];

		put_word(want, pat_word(w, src, dst, idx));
		if (memcmp(b + 8 * w, want, 8))
			break;
	}
	/* from the first wrong word on, byte by byte: which byte */
	for (size_t i = 8 * w; i < len; i++)
		if (b[i] != tp_pat(i, src, dst, idx))
			return (long)i;
	return -1;
}

void tp_req_send(struct ohc_req *q, const void *buf, size_t len, uint64_t seq)
{
	memset(q, 0, sizeof(*q));
	q->sig.seq = seq;
	q->sig.len = len;
	q->sbuf = buf;
	q->len = len;
	q->status = OHC_INPROGRESS;
	ohc_list_init(&q->link);
}

void tp_req_recv(struct ohc_req *q, void *buf, size_t len, uint64_t seq)
{
	memset(q, 0, sizeof(*q));
	q->sig.seq = seq;
	q->sig.len = len;
	q->dst = buf;
	q->len = len;
	q->kind = OHC_RECV_COPY;
	q->status = OHC_INPROGRESS;
	ohc_list_init(&q->link);
}

int tp_post_all_pairs(struct tp_rank *c, uint8_t *const *sb, uint8_t *const *rb,
		      size_t len, uint64_t seq, struct ohc_req *sreq,
		      struct ohc_req *rreq, struct ohc_req **all, int *n)
{
	*n = 0;
	for (int d = 1; d < c->nranks; d++) {
		int to = (c->rank + d) % c->nranks;
		int from = (c->rank - d + c->nranks) % c->nranks;

		tp_req_recv(&rreq[from], rb[from], len, seq);
		CHECK(c->ops->ep_recv(c->eps[from], &rreq[from]) == OHC_OK,
		      "ep_recv from %d", from);
		tp_req_send(&sreq[to], sb[to], len, seq);
		CHECK(c->ops->ep_send(c->eps[to], &sreq[to]) == OHC_OK,
		      "ep_send to %d", to);
		all[(*n)++] = &rreq[from];
		all[(*n)++] = &sreq[to];
	}
	return 0;
}

int tp_have_rdma(void)
{
	int n = 0;
	struct ibv_device **l = ohc_vx_get_device_list(&n);

	ohc_vx_free_device_list(l);
	return l && n > 0;
}

double tp_cpu_seconds(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}
