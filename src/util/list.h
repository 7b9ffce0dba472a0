/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_UTIL_LIST_H
#define OHC_UTIL_LIST_H

#include <stdbool.h>
#include "util/compiler.h"

/* Intrusive circular doubly linked list; no locking of its own. */
struct ohc_list {
	struct ohc_list *prev, *next;
};

#define OHC_LIST_INIT(name) { &(name), &(name) }

static inline void ohc_list_init(struct ohc_list *h)
{
	h->prev = h->next = h;
}

static inline bool ohc_list_empty(const struct ohc_list *h)
{
	return h->next == h;
}

static inline void ohc_list_add_tail(struct ohc_list *h, struct ohc_list *e)
{
	e->prev = h->prev;
	e->next = h;
	h->prev->next = e;
	h->prev = e;
}

static inline void ohc_list_del(struct ohc_list *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->prev = e->next = e;
}

#define ohc_list_first(h, type, member)                                        \
	ohc_container_of((h)->next, type, member)

#define ohc_list_for_each(pos, h) for (pos = (h)->next; pos != (h); pos = pos->next)

#endif
