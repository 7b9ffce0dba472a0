/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process registry of communicators: the list of live ones (by name,
 * rank and device), the handles users hold (slot + generation, checked
 * before use), and the process-wide deterministic setting applied to all
 * of them. Create and destroy (comm.c) add and remove a communicator.
 */
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "comm/comm_int.h"

static struct ohc_list registry = OHC_LIST_INIT(registry);
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static int global_deterministic = -1; /* guarded by registry_lock */

void ohc_comm_set_deterministic_all(int value)
{
	struct ohc_list *pos;

	pthread_mutex_lock(&registry_lock);
	global_deterministic = value;
	ohc_list_for_each(pos, &registry)
	{
		struct ohc_comm *c =
			ohc_container_of(pos, struct ohc_comm, link);

		__atomic_store_n(&c->cfg.deterministic, value,
				 __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&registry_lock);
}

int ohc_comm_get_deterministic_global(void)
{
	int v;

	pthread_mutex_lock(&registry_lock);
	v = global_deterministic;
	pthread_mutex_unlock(&registry_lock);
	return v;
}

struct ohc_comm *ohc_comm_find(const char *name, int device)
{
	struct ohc_comm *found = NULL;
	struct ohc_list *pos;

	pthread_mutex_lock(&registry_lock);
	ohc_list_for_each(pos, &registry)
	{
		struct ohc_comm *c =
			ohc_container_of(pos, struct ohc_comm, link);

		if (strcmp(c->name, name))
			continue;
		if (!found || c->device == device)
			found = c;
	}
	pthread_mutex_unlock(&registry_lock);
	return found;
}

/*
 * Handles. The HcclComm a user holds is not the communicator's address but
 * a slot of this table and the slot's generation ((gen << 32) | (slot + 1)),
 * so the handle of a destroyed communicator, a handle used twice for
 * destroy, or a value never handed out is refused without reading any
 * memory it might point to. Slots are reused with the next generation.
 * A thread remembers the last handle it found live together with the
 * epoch, which every removal bumps: the common case is one compare.
 */
struct comm_slot {
	struct ohc_comm *comm; /* NULL: free */
	uint32_t gen;	       /* >= 1 */
};

static struct comm_slot *slots; /* under registry_lock */
static uint32_t nslots;
static uint64_t handle_epoch; /* atomic; written under registry_lock */
static __thread const void *cached_handle;
static __thread struct ohc_comm *cached_comm;
static __thread uint64_t cached_epoch;

_Static_assert(sizeof(void *) == sizeof(uint64_t),
	       "communicator handles pack 64 bits into a pointer");

static void *handle_make(uint32_t slot, uint32_t gen)
{
	return (void *)(uintptr_t)(((uint64_t)gen << 32) | (slot + 1ull));
}

/* Give comm a slot and a handle (registry_lock held). */
static ohc_status_t handle_add_locked(struct ohc_comm *comm)
{
	uint32_t i;

	for (i = 0; i < nslots && slots[i].comm; i++)
		;
	if (i == nslots) {
		struct comm_slot *grown;
		uint32_t cap = nslots ? 2 * nslots : 16;

		if (nslots >= (1u << 30))
			return OHC_ERR_NO_MEMORY;
		grown = realloc(slots, cap * sizeof(*slots));
		if (!grown)
			return OHC_ERR_NO_MEMORY;
		for (uint32_t k = nslots; k < cap; k++)
			grown[k] = (struct comm_slot){NULL, 1};
		slots = grown;
		nslots = cap;
	}
	slots[i].comm = comm;
	comm->handle = handle_make(i, slots[i].gen);
	return OHC_OK;
}

/* Retire comm's handle for good (registry_lock held). */
static void handle_remove_locked(struct ohc_comm *comm)
{
	uint64_t v = (uint64_t)(uintptr_t)comm->handle;
	struct comm_slot *sl = &slots[(uint32_t)v - 1];

	sl->comm = NULL;
	if (++sl->gen == 0)
		sl->gen = 1;
	__atomic_store_n(&handle_epoch, handle_epoch + 1, __ATOMIC_RELEASE);
}

/* Give comm a handle and list it (create's last step). */
ohc_status_t ohc_comm_registry_add(struct ohc_comm *comm)
{
	ohc_status_t status;

	pthread_mutex_lock(&registry_lock);
	status = handle_add_locked(comm);
	if (status == OHC_OK)
		ohc_list_add_tail(&registry, &comm->link);
	pthread_mutex_unlock(&registry_lock);
	return status;
}

/* Unlist comm and retire its handle (destroy). */
void ohc_comm_registry_remove(struct ohc_comm *comm)
{
	pthread_mutex_lock(&registry_lock);
	ohc_list_del(&comm->link);
	handle_remove_locked(comm);
	pthread_mutex_unlock(&registry_lock);
}

struct ohc_comm *ohc_comm_lookup(const void *handle)
{
	uint64_t v = (uint64_t)(uintptr_t)handle, epoch;
	uint32_t slot = (uint32_t)v - 1, gen = (uint32_t)(v >> 32);
	struct ohc_comm *found = NULL;

	if (handle && handle == cached_handle &&
	    __atomic_load_n(&handle_epoch, __ATOMIC_ACQUIRE) == cached_epoch)
		return cached_comm;
	if ((uint32_t)v == 0 || gen == 0)
		return NULL;
	pthread_mutex_lock(&registry_lock);
	epoch = handle_epoch;
	if (slot < nslots && slots[slot].gen == gen)
		found = slots[slot].comm;
	pthread_mutex_unlock(&registry_lock);
	if (found) {
		cached_handle = handle;
		cached_comm = found;
		cached_epoch = epoch;
	}
	return found;
}

void *ohc_comm_handle(const struct ohc_comm *comm)
{
	return comm->handle;
}

void ohc_comm_for_each(void (*fn)(struct ohc_comm *comm, void *arg), void *arg)
{
	struct ohc_list *pos;

	pthread_mutex_lock(&registry_lock);
	ohc_list_for_each(pos, &registry)
	{
		fn(ohc_container_of(pos, struct ohc_comm, link), arg);
	}
	pthread_mutex_unlock(&registry_lock);
}

int ohc_comm_name_taken(const char *name, uint32_t rank)
{
	struct ohc_list *pos;
	int taken = 0;

	pthread_mutex_lock(&registry_lock);
	ohc_list_for_each(pos, &registry)
	{
		struct ohc_comm *c =
			ohc_container_of(pos, struct ohc_comm, link);

		if (!strcmp(c->name, name) && c->rank == rank)
			taken = 1;
	}
	pthread_mutex_unlock(&registry_lock);
	return taken;
}

int ohc_comm_name_clash(const char *name, uint32_t rank, int device)
{
	struct ohc_list *pos;
	int clash = 0;

	pthread_mutex_lock(&registry_lock);
	ohc_list_for_each(pos, &registry)
	{
		struct ohc_comm *c =
			ohc_container_of(pos, struct ohc_comm, link);

		if (!strcmp(c->name, name) &&
		    (c->rank == rank || c->device == device))
			clash = 1;
	}
	pthread_mutex_unlock(&registry_lock);
	return clash;
}
