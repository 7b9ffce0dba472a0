/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs transport's memory registration cache: one per iface (its
 * protection domain). Entries are registered page ranges, refcounted by
 * the requests using them:
 *  - exported memory (mem_reg: HcclCommActivateCommMemory, symmetric
 *    windows) is registered once and stays until mem_dereg; a request
 *    still using it then keeps it until its own put.
 *  - ordinary user buffers are registered when a rendezvous needs them
 *    and, by default, deregistered when the last request using them
 *    completes. OPENHCCL_RDMA_MR_CACHE=n keeps up to n unused ones for
 *    reuse (least recently used go first). Such an entry pins the pages
 *    it was registered on: if the user frees the buffer and gets new
 *    memory at the same address, a cached entry would still point at the
 *    old pages. So keep n at 0 unless buffers live as long as the
 *    communicator (the usual case for collectives' buffers).
 * A thread-safe cache: mem_reg comes from API threads while the executor
 * uses it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/verbs/verbs.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/log.h"

#define VX_PAGE 4096u

struct vx_mr {
	struct ohc_list node;
	uintptr_t start, end;
	struct ibv_mr *mr;
	unsigned refs;
	int zc;	  /* exported memory (mem_reg), not yet deregistered */
	int dead; /* mem_dereg'd while in use: freed at the last put */
	int ro;	  /* registered without write access (read-only memory) */
};

void ohc_vx_mr_cache_init(struct ohc_verbs_iface *vi)
{
	struct vx_mr_cache *c = &vi->mrc;

	pthread_mutex_init(&c->lock, NULL);
	ohc_list_init(&c->entries);
	c->max_idle = (unsigned)ohc_env()->rdma_mr_cache;
	c->inited = 1;
}

static void entry_free(struct vx_mr_cache *c, struct vx_mr *m)
{
	ohc_list_del(&m->node);
	c->n--;
	ohc_vx_dereg_mr(m->mr);
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
	pthread_mutex_destroy(&c->lock);
	c->inited = 0;
}

/* Drop unused entries of ordinary memory beyond the limit (lock held). */
static void trim_locked(struct vx_mr_cache *c)
{
	struct ohc_list *p = c->entries.next;

	while (c->idle > c->max_idle && p != &c->entries) {
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
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct vx_mr *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->start = start;
	m->end = end;
	m->mr = ohc_vx_reg_mr(vi->pd, (void *)start, end - start, access);
	if (!m->mr && !write && errno == EFAULT) {
		/* read-only memory is fine as a source */
		m->mr = ohc_vx_reg_mr(vi->pd, (void *)start, end - start, 0);
		m->ro = 1;
	}
	if (!m->mr) {
		free(m);
		return NULL;
	}
	return m;
}

struct vx_mr *ohc_vx_mr_get(struct ohc_verbs_iface *vi, const void *addr,
			    size_t len, int write, int *zc_p)
{
	struct vx_mr_cache *c = &vi->mrc;
	uintptr_t a = (uintptr_t)addr, b = a + len;
	struct ohc_list *p;
	struct vx_mr *m;

	*zc_p = 0;
	if (!len || b < a)
		return NULL;
	pthread_mutex_lock(&c->lock);
	ohc_list_for_each(p, &c->entries)
	{
		m = ohc_container_of(p, struct vx_mr, node);
		if (m->dead || m->start > a || m->end < b || (write && m->ro))
			continue;
		if (!m->refs && !m->zc)
			c->idle--;
		m->refs++;
		ohc_list_del(&m->node);
		ohc_list_add_tail(&c->entries, &m->node);
		*zc_p = m->zc;
		pthread_mutex_unlock(&c->lock);
		return m;
	}
	m = entry_new(vi, a & ~(uintptr_t)(VX_PAGE - 1),
		      (b + VX_PAGE - 1) & ~(uintptr_t)(VX_PAGE - 1), write);
	if (m) {
		m->refs = 1;
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
			trim_locked(c);
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
