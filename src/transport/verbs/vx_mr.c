/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs transport's memory registration cache: one per iface (its
 * protection domain). Entries are registered page ranges, refcounted by
 * the requests using them:
 *  - exported memory (mem_reg: HcclCommActivateCommMemory, symmetric
 *    windows) is registered once and stays until mem_dereg; a request
 *    still using it then keeps it until its own put. It is never
 *    checked: the user promised it stays until mem_dereg.
 *  - ordinary user buffers are registered when a rendezvous needs them.
 *    Up to OPENHCCL_RDMA_MR_CACHE unused ones stay cached for reuse
 *    (least recently used go first); unset, that is 64 where
 *    /proc/self/pagemap shows PFNs (CAP_SYS_ADMIN) and 0 elsewhere, and
 *    with 0 an entry is deregistered when its last request completes.
 *    A registration pins the pages it was made on: if the user frees the
 *    buffer and gets new memory at the same address, the entry still
 *    points at the old pages. So, when the check is on, an entry keeps
 *    the pagemap entries (PFN, present bit) its pages had right after
 *    ibv_reg_mr, and every reuse of [a, b) reads those of a..b's pages
 *    again (8 bytes per page, one pread per 512 pages). The pinned pages
 *    cannot be handed out again while the entry lives, so "all present,
 *    same PFNs" proves the range still maps them. Otherwise the entry is
 *    stale: dropped (in use: never handed out again, freed at its last
 *    put), counted (ohc_vx_mr_stale), and the range registered afresh.
 *    An entry whose pages showed no PFN at registration is never reused.
 *    Where PFNs are hidden, an n > 0 set explicitly trusts entries
 *    unchecked (logged once): buffers must then not be freed while cached.
 *  - a registration that fails while unused entries are cached drops
 *    them and tries once more (they may hold the memlock limit).
 * A thread-safe cache: mem_reg comes from API threads while the executor
 * uses it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/verbs/verbs.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/log.h"
#include "util/pagemap.h"

#define VX_PAGE 4096u

struct vx_mr {
	struct ohc_list node;
	uintptr_t start, end;
	struct ibv_mr *mr;
	unsigned refs;
	int zc; /* exported memory (mem_reg), not yet deregistered */
	/* registered with IBV_ACCESS_REMOTE_WRITE: a receive buffer whose
	 * rkey goes to the peer. Sources get local access only, so a peer
	 * can never write into a buffer that we only send from. */
	int remote_write;
	/* never handed out again, freed at the last put: mem_dereg'd,
	 * found stale, or its pages could not be recorded */
	int dead;
	/* pagemap entries of its pages after registration (ordinary
	 * memory with the check on), from start's page; else NULL */
	uint64_t *pm;
};

void ohc_vx_mr_cache_init(struct ohc_verbs_iface *vi)
{
	struct vx_mr_cache *c = &vi->mrc;
	int set = ohc_config_is_set("OPENHCCL_RDMA_MR_CACHE");
	static int warned;

	pthread_mutex_init(&c->lock, NULL);
	ohc_list_init(&c->entries);
	c->max_idle = (unsigned)ohc_env()->rdma_mr_cache;
	c->pm_fd = -1;
	c->page = ohc_pagemap_page_size();
	if (c->max_idle && ohc_pagemap_usable())
		c->pm_fd = ohc_pagemap_open();
	if (c->max_idle && c->pm_fd < 0) {
		if (!set)
			c->max_idle = 0;
		else if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
			OHC_WARN(
				OHC_SS_VERBS,
				"OPENHCCL_RDMA_MR_CACHE=%u: /proc/self/pagemap "
				"shows no PFNs here (no CAP_SYS_ADMIN), so "
				"cached registrations are reused unchecked; "
				"do not free buffers while they are cached",
				c->max_idle);
	}
	c->inited = 1;
}

static void entry_free(struct vx_mr_cache *c, struct vx_mr *m)
{
	ohc_list_del(&m->node);
	c->n--;
	ohc_vx_dereg_mr(m->mr);
	free(m->pm);
	free(m);
}

void ohc_vx_mr_cache_fini(struct ohc_verbs_iface *vi)
{
	struct vx_mr_cache *c = &vi->mrc;

	if (!c->inited)
		return;
	while (!ohc_list_empty(&c->entries))
		entry_free(c, ohc_container_of(c->entries.next, struct vx_mr,
					       node));
	c->idle = 0;
	if (c->pm_fd >= 0)
		close(c->pm_fd);
	pthread_mutex_destroy(&c->lock);
	c->inited = 0;
}

/* Drop unused entries of ordinary memory beyond max (lock held). */
static void trim_locked(struct vx_mr_cache *c, unsigned max)
{
	struct ohc_list *p = c->entries.next;

	while (c->idle > max && p != &c->entries) {
		struct vx_mr *m = ohc_container_of(p, struct vx_mr, node);

		p = p->next;
		if (m->refs || m->zc)
			continue;
		entry_free(c, m);
		c->idle--;
	}
}

static struct vx_mr *entry_new(struct ohc_verbs_iface *vi, uintptr_t start,
			       uintptr_t end, int write)
{
	/* LOCAL_WRITE even for a source: it makes the kernel pin the pages
	 * the buffer really has (not the zero page an untouched one maps) */
	int access =
		IBV_ACCESS_LOCAL_WRITE | (write ? IBV_ACCESS_REMOTE_WRITE : 0);
	struct vx_mr *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->start = start;
	m->end = end;
	m->mr = ohc_vx_reg_mr(vi->pd, (void *)start, end - start, access);
	if (!m->mr && !write && errno == EFAULT) /* read-only memory */
		m->mr = ohc_vx_reg_mr(vi->pd, (void *)start, end - start, 0);
	m->remote_write = write;
	if (!m->mr) {
		free(m);
		return NULL;
	}
	return m;
}

/*
 * Keep the pagemap entries of m's pages, now pinned (lock held). 0, or
 * -1 when they cannot be read or show no page: m must not be reused.
 */
static int entry_record(struct vx_mr_cache *c, struct vx_mr *m)
{
	uintptr_t base = m->start & ~(uintptr_t)(c->page - 1);
	size_t n = (m->end - base + c->page - 1) / c->page;

	m->pm = malloc(n * sizeof(*m->pm));
	if (!m->pm || ohc_pagemap_read(c->pm_fd, base, n, m->pm) != OHC_OK)
		goto err_free;
	for (size_t i = 0; i < n; i++)
		if (!ohc_pagemap_valid(m->pm[i]))
			goto err_free;
	return 0;
err_free:
	free(m->pm);
	m->pm = NULL;
	return -1;
}

/* 1 if [a, b) (inside m) still maps the pages m pinned (lock held). */
static int entry_current(const struct vx_mr_cache *c, const struct vx_mr *m,
			 uintptr_t a, uintptr_t b)
{
	uintptr_t mask = ~(uintptr_t)(c->page - 1);
	uintptr_t first = a & mask;

	return ohc_pagemap_same(c->pm_fd, first,
				(b - first + c->page - 1) / c->page,
				m->pm + (first - (m->start & mask)) / c->page);
}

/* m's range maps other pages now: never hand it out again (lock held). */
static void entry_stale_locked(struct ohc_verbs_iface *vi, struct vx_mr *m)
{
	struct vx_mr_cache *c = &vi->mrc;

	c->stale++;
	OHC_DEBUG(OHC_SS_VERBS,
		  "rank %u: registration of [%#lx, %#lx) is stale (the "
		  "address maps other pages now), %s",
		  vi->super.rank, (unsigned long)m->start,
		  (unsigned long)m->end,
		  m->refs ? "freed when its requests finish" : "dropped");
	if (m->refs) {
		m->dead = 1;
		return;
	}
	entry_free(c, m);
	c->idle--;
}

struct vx_mr *ohc_vx_mr_get(struct ohc_verbs_iface *vi, const void *addr,
			    size_t len, int write, int *zc_p)
{
	struct vx_mr_cache *c = &vi->mrc;
	uintptr_t a = (uintptr_t)addr, b = a + len;
	uintptr_t start = a & ~(uintptr_t)(VX_PAGE - 1);
	uintptr_t end = (b + VX_PAGE - 1) & ~(uintptr_t)(VX_PAGE - 1);
	struct ohc_list *p, *next;
	struct vx_mr *m;

	*zc_p = 0;
	if (!len || b < a)
		return NULL;
	pthread_mutex_lock(&c->lock);
	for (p = c->entries.next; p != &c->entries; p = next) {
		next = p->next;
		m = ohc_container_of(p, struct vx_mr, node);
		if (m->dead || m->start > a || m->end < b ||
		    (write && !m->remote_write))
			continue;
		if (m->pm && !entry_current(c, m, a, b)) {
			entry_stale_locked(vi, m);
			continue;
		}
		if (!m->refs && !m->zc)
			c->idle--;
		m->refs++;
		ohc_list_del(&m->node);
		ohc_list_add_tail(&c->entries, &m->node);
		*zc_p = m->zc;
		pthread_mutex_unlock(&c->lock);
		return m;
	}
	m = entry_new(vi, start, end, write);
	if (!m && c->idle) {
		trim_locked(c, 0);
		m = entry_new(vi, start, end, write);
	}
	if (m) {
		m->refs = 1;
		if (c->pm_fd >= 0 && entry_record(c, m))
			m->dead = 1; /* unverifiable: freed at its put */
		ohc_list_add_tail(&c->entries, &m->node);
		c->n++;
	}
	pthread_mutex_unlock(&c->lock);
	return m;
}

void ohc_vx_mr_put(struct ohc_verbs_iface *vi, struct vx_mr *m)
{
	struct vx_mr_cache *c = &vi->mrc;

	if (!m)
		return;
	pthread_mutex_lock(&c->lock);
	if (--m->refs == 0 && !m->zc) {
		if (m->dead) {
			entry_free(c, m);
		} else {
			c->idle++;
			trim_locked(c, c->max_idle);
		}
	}
	pthread_mutex_unlock(&c->lock);
}

uint32_t ohc_vx_mr_lkey(const struct vx_mr *m)
{
	return m->mr->lkey;
}

uint32_t ohc_vx_mr_rkey(const struct vx_mr *m)
{
	return m->mr->rkey;
}

unsigned ohc_vx_mr_cached(struct ohc_verbs_iface *vi)
{
	unsigned n;

	if (!vi->mrc.inited)
		return 0;
	pthread_mutex_lock(&vi->mrc.lock);
	n = vi->mrc.n;
	pthread_mutex_unlock(&vi->mrc.lock);
	return n;
}

unsigned long ohc_vx_mr_stale(struct ohc_verbs_iface *vi)
{
	unsigned long n;

	if (!vi->mrc.inited)
		return 0;
	pthread_mutex_lock(&vi->mrc.lock);
	n = vi->mrc.stale;
	pthread_mutex_unlock(&vi->mrc.lock);
	return n;
}

ohc_status_t ohc_vx_mem_reg(struct ohc_iface *iface, void *addr, size_t len,
			    const struct ohc_mem_desc *desc, void **handle_p)
{
	struct ohc_verbs_iface *vi =
		ohc_derived_of(iface, struct ohc_verbs_iface);
	struct vx_mr_cache *c = &vi->mrc;
	struct vx_mr *m;

	(void)desc;
	*handle_p = NULL;
	if (!c->inited || !len)
		return OHC_ERR_INVALID;
	m = entry_new(vi, (uintptr_t)addr, (uintptr_t)addr + len, 1);
	if (!m) {
		OHC_ERROR(OHC_SS_VERBS,
			  "rank %u: cannot register [%p, +%zu) on %s: %s",
			  iface->rank, addr, len, vi->dev_name,
			  strerror(errno));
		return errno == ENOMEM ? OHC_ERR_NO_MEMORY
				       : OHC_ERR_UNAVAILABLE;
	}
	m->zc = 1;
	pthread_mutex_lock(&c->lock);
	ohc_list_add_tail(&c->entries, &m->node);
	c->n++;
	pthread_mutex_unlock(&c->lock);
	*handle_p = m;
	return OHC_OK;
}

void ohc_vx_mem_dereg(struct ohc_iface *iface, void *handle)
{
	struct ohc_verbs_iface *vi =
		ohc_derived_of(iface, struct ohc_verbs_iface);
	struct vx_mr_cache *c = &vi->mrc;
	struct vx_mr *m = handle;

	if (!m || !c->inited)
		return;
	pthread_mutex_lock(&c->lock);
	m->zc = 0;
	m->dead = 1;
	if (!m->refs)
		entry_free(c, m);
	pthread_mutex_unlock(&c->lock);
}
