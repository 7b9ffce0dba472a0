/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "algo/reduce.h"
#include "comm/comm.h"
#include "core/exec.h"
#include "core/wait.h"
#include "transport/transport.h"
#include "util/config.h"
#include "util/log.h"
#include "util/time.h"

/* One wire record per rank and transport in the address exchange. */
struct addr_rec {
	uint16_t len;
	uint8_t blob[OHC_ADDR_MAX];
};

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

void ohc_comm_cfg_default(struct ohc_comm_cfg *c)
{
	const struct ohc_env *env = ohc_env();

	memset(c, 0, sizeof(*c));
	c->buffsize_mb = (uint32_t)env->buffsize_mb;
	c->deterministic = ohc_comm_get_deterministic_global();
	if (c->deterministic < 0)
		c->deterministic = (int)env->deterministic;
	c->exec_timeout_s = env->exec_timeout_s;
	c->rdma_tc = (uint32_t)env->rdma_tc;
	c->rdma_sl = (uint32_t)env->rdma_sl;
	snprintf(c->algo, sizeof(c->algo), "%s", env->algo);
	c->qos = 6;
	c->symwin_max_gb = 16;
	c->sq_depth = 0xffffffffu;
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

/*
 * Ops without a tail come from slabs: page-populated arrays handed out op
 * by op, each op then recycled through the communicator's pool and never
 * freed on its own. A deep queue (hccl_test enqueues all its iterations
 * before it synchronizes) thus costs one mmap per slab instead of a
 * calloc and a first-touch page fault per op; the first 20000 8-byte
 * AllReduces of all_reduce_test took ~2900 page faults more than 100 did.
 * Slabs grow from OP_SLAB_MIN to OP_SLAB_MAX ops and stop at OP_POOL_MAX
 * ops in all (~4.5 MiB, the most an application keeps queued at once in
 * practice); past that, ops are calloc'd and freed one by one.
 */
#define OP_POOL_MAX 16384
#define OP_SLAB_MIN 16
#define OP_SLAB_MAX 1024

struct ohc_op_slab {
	struct ohc_op_slab *next;
	size_t bytes; /* of the mapping, this header included */
	/* ops, sizeof(struct ohc_op) apart (its tail stays empty) */
	char mem[] __attribute__((aligned(64)));
};

static struct ohc_op *slab_op(struct ohc_op_slab *slab, unsigned i)
{
	return (struct ohc_op *)(void *)(slab->mem +
					 (size_t)i * sizeof(struct ohc_op));
}

/* Push the chain first..last (linked by pool_next) onto comm's pool. */
static void pool_push(struct ohc_comm *comm, struct ohc_op *first,
		      struct ohc_op *last)
{
	struct ohc_op *top = __atomic_load_n(&comm->op_pool, __ATOMIC_RELAXED);

	do
		last->pool_next = top;
	while (!__atomic_compare_exchange_n(&comm->op_pool, &top, first, 0,
					    __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
}

/*
 * The next op never used yet: from the newest slab, or a new slab mapped
 * (the caller holds op_pool_taking). Ops are handed out one by one rather
 * than linked into the pool when the slab is mapped: that pass over cold
 * memory was half of the enqueue's time in the first 16384 ops. NULL
 * when the cap is reached or mmap fails.
 */
static struct ohc_op *op_slab_carve(struct ohc_comm *comm)
{
	unsigned n = comm->op_slab_ops ? comm->op_slab_ops : OP_SLAB_MIN;
	struct ohc_op_slab *slab;
	size_t bytes;

	if (comm->op_slab_next < comm->op_slab_n)
		return slab_op(comm->op_slabs, comm->op_slab_next++);
	n = OHC_MIN(OHC_MIN(n, (unsigned)OP_SLAB_MAX),
		    OP_POOL_MAX - comm->op_slab_ops);
	if (!n)
		return NULL;
	bytes = sizeof(*slab) + (size_t)n * sizeof(struct ohc_op);
	slab = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (slab == MAP_FAILED)
		return NULL;
	slab->bytes = bytes;
	slab->next = comm->op_slabs;
	comm->op_slabs = slab;
	comm->op_slab_ops += n;
	comm->op_slab_n = n;
	comm->op_slab_next = 1;
	return slab_op(slab, 0);
}

/*
 * A spare op of comm (from the pool, or a new slab), or NULL (the cap is
 * reached, or another submitter is taking).
 */
static struct ohc_op *op_pool_take(struct ohc_comm *comm)
{
	struct ohc_op *op;

	if (__atomic_exchange_n(&comm->op_pool_taking, 1, __ATOMIC_ACQUIRE))
		return NULL;
	/* one atomic per op: the pool is taken over whole when we run out */
	if (!comm->op_taken &&
	    __atomic_load_n(&comm->op_pool, __ATOMIC_RELAXED))
		comm->op_taken = __atomic_exchange_n(&comm->op_pool, NULL,
						     __ATOMIC_ACQUIRE);
	op = comm->op_taken;
	if (op)
		comm->op_taken = op->pool_next;
	else
		op = op_slab_carve(comm);
	__atomic_store_n(&comm->op_pool_taking, 0, __ATOMIC_RELEASE);
	return op;
}

/*
 * Free op or give it back to the pool. The caller still holds the op's
 * count in comm->inflight (if it took one), so comm outlives this call.
 */
static void op_free(struct ohc_comm *comm, struct ohc_op *op)
{
	if (op->pooled)
		pool_push(comm, op, op);
	else
		free(op);
}

void ohc_op_free(struct ohc_op *op)
{
	op_free(op->comm, op);
}

/* Comm is idle (no op in flight, none being submitted). */
static void op_pool_fini(struct ohc_comm *comm)
{
	struct ohc_op_slab *slab = comm->op_slabs;

	while (slab) {
		struct ohc_op_slab *next = slab->next;

		munmap(slab, slab->bytes);
		slab = next;
	}
	comm->op_slabs = NULL;
	comm->op_slab_ops = 0;
	comm->op_slab_next = comm->op_slab_n = 0;
	comm->op_pool = comm->op_taken = NULL;
}

void ohc_comm_transports_close(struct ohc_comm *comm)
{
	if (comm->eps) {
		for (uint32_t r = 0; r < comm->nranks; r++) {
			struct ohc_ep *ep = comm->eps[r];

			if (!ep)
				continue;
			ep->iface->ops->ep_fini(ep);
			free(ep);
			comm->eps[r] = NULL;
		}
	}
	for (unsigned i = 0; i < comm->nifaces; i++) {
		comm->ifaces[i]->ops->iface_close(comm->ifaces[i]);
		free(comm->ifaces[i]);
	}
	comm->nifaces = 0;
}

static void comm_free(struct ohc_comm *comm)
{
	ohc_comm_transports_close(comm);
	free(comm->eps);
	free(comm->ep_ops);
	free(comm->host_of);
	free(comm->on_backup);
	pthread_mutex_destroy(&comm->lock);
	pthread_cond_destroy(&comm->idle_cond);
	pthread_mutex_destroy(&comm->exec_lock);
	ohc_plan_cache_fini(&comm->plans);
	free(comm->spare);
	op_pool_fini(comm);
	free(comm);
}

void ohc_comm_tp_params(struct ohc_comm *comm, const char *device_ip,
			char *hostid, struct ohc_transport_params *params)
{
	int dev = comm->device;

	snprintf(hostid, 256, "%s", ohc_bootstrap_hostid(comm->bs, comm->rank));
	memset(params, 0, sizeof(*params));
	params->rank = comm->rank;
	params->nranks = comm->nranks;
	params->session = comm->session;
	params->hostid = hostid;
	params->numa_node = ohc_rt_device_numa_node(dev < 0 ? 0 : dev);
	params->ring_bytes = (size_t)ohc_env()->shm_ring_kb * 1024;
	params->cma_bytes = (size_t)ohc_env()->shm_cma_kb * 1024;
	params->zc_bytes = (size_t)ohc_env()->shm_zc_kb * 1024;
	params->spin = 0;
	params->device_ip = device_ip && device_ip[0] ? device_ip : NULL;
	params->device_ip_key = device_ip == comm->cfg.backup_ip
					? "backup_device_ip"
					: "device_ip";
	params->rdma_tc = comm->cfg.rdma_tc;
	params->rdma_sl = comm->cfg.rdma_sl;
}

/*
 * Open every built-in transport, exchange address blobs, pick one
 * transport per peer (the first that reaches it: self, shm, verbs), and
 * connect. Transports nobody uses are closed again.
 */
ohc_status_t ohc_comm_transports_open(struct ohc_comm *comm, uint64_t session,
				      uint64_t deadline)
{
	const struct ohc_env *env = ohc_env();
	unsigned ntp = ohc_transport_count();
	struct ohc_iface *open[OHC_MAX_TRANSPORTS] = {0};
	struct addr_rec *recs = NULL;
	struct ohc_ep **eps_by_tp = NULL;
	struct ohc_transport_params params;
	char hostid[256];
	ohc_status_t status = OHC_OK;

	comm->session = session;
	ohc_comm_tp_params(comm, comm->cfg.device_ip, hostid, &params);

	recs = calloc((size_t)comm->nranks * ntp, sizeof(*recs));
	eps_by_tp = calloc(comm->nranks, sizeof(*eps_by_tp));
	comm->eps = calloc(comm->nranks, sizeof(*comm->eps));
	comm->ep_ops = calloc(comm->nranks, sizeof(*comm->ep_ops));
	if (!recs || !eps_by_tp || !comm->eps || !comm->ep_ops) {
		status = OHC_ERR_NO_MEMORY;
		goto out;
	}

	for (unsigned t = 0; t < ntp && t < OHC_MAX_TRANSPORTS; t++) {
		const struct ohc_transport_ops *ops = ohc_transport_at(t);
		struct addr_rec *mine = &recs[(size_t)comm->rank * ntp + t];
		struct ohc_iface *iface = calloc(1, ops->iface_size);
		size_t len = OHC_ADDR_MAX;

		if (!iface) {
			status = OHC_ERR_NO_MEMORY;
			goto out;
		}
		iface->ops = ops;
		iface->rank = comm->rank;
		iface->nranks = comm->nranks;
		status = ops->iface_open(iface, &params);
		if (status == OHC_ERR_UNSUPPORTED) {
			/* not on this machine (e.g. no RDMA device) */
			OHC_INFO(OHC_SS_INIT,
				 "rank %u: transport %s not available here",
				 comm->rank, ops->name);
			free(iface);
			status = OHC_OK;
			continue;
		}
		if (status < 0) {
			OHC_WARN(OHC_SS_INIT,
				 "rank %u: transport %s unavailable: %s",
				 comm->rank, ops->name, ohc_status_str(status));
			free(iface);
			status = OHC_OK;
			continue;
		}
		open[t] = iface;
		status = ops->iface_address(iface, mine->blob, &len);
		if (status < 0)
			goto out;
		mine->len = (uint16_t)len;
	}

	status = ohc_bootstrap_allgather(comm->bs, recs, ntp * sizeof(*recs));
	if (status < 0)
		goto out;

	for (uint32_t r = 0; r < comm->nranks; r++) {
		if (r == comm->rank)
			continue;
		for (unsigned t = 0; t < ntp && t < OHC_MAX_TRANSPORTS; t++) {
			const struct addr_rec *peer =
				&recs[(size_t)r * ntp + t];
			struct ohc_iface *iface = open[t];
			struct ohc_ep *ep;

			if (!iface || peer->len == 0 ||
			    peer->len > OHC_ADDR_MAX)
				continue;
			/* HCCL_INTRA_ROCE_ENABLE: peers on this host over
			 * the NIC too, not over a host-only transport */
			if (env->intra_roce_enable &&
			    (iface->ops->caps & OHC_TP_CAP_SAME_HOST) &&
			    !(iface->ops->caps & OHC_TP_CAP_NIC))
				continue;
			if (!iface->ops->iface_reachable(iface, peer->blob,
							 peer->len))
				continue;
			ep = calloc(1, iface->ops->ep_size);
			if (!ep) {
				status = OHC_ERR_NO_MEMORY;
				goto out;
			}
			ep->iface = iface;
			ep->peer = r;
			status = iface->ops->ep_init(iface, ep, r, peer->blob,
						     peer->len);
			if (status < 0) {
				free(ep);
				OHC_ERROR(OHC_SS_INIT,
					  "rank %u: cannot set up %s endpoint "
					  "to rank %u: %s",
					  comm->rank, iface->ops->name, r,
					  ohc_status_str(status));
				goto out;
			}
			comm->eps[r] = ep;
			comm->ep_ops[r] = iface->ops;
			break;
		}
		if (!comm->eps[r]) {
			char has[64] = "";

			/* what the peer could open: a missing one failed
			 * there, and its log says why */
			for (unsigned t = 0; t < ntp && t < OHC_MAX_TRANSPORTS;
			     t++)
				if (recs[(size_t)r * ntp + t].len)
					snprintf(has + strlen(has),
						 sizeof(has) - strlen(has),
						 "%s%s", has[0] ? "," : "",
						 ohc_transport_at(t)->name);
			OHC_ERROR(OHC_SS_INIT,
				  "rank %u: no transport reaches rank %u (host "
				  "%s, transports it opened: %s)%s",
				  comm->rank, r,
				  ohc_bootstrap_hostid(comm->bs, r),
				  has[0] ? has : "none",
				  env->intra_roce_enable
					  ? ": HCCL_INTRA_ROCE_ENABLE=1 needs "
					    "an RDMA device"
					  : ": peers on other hosts need the "
					    "verbs transport and an RDMA "
					    "device");
			status = OHC_ERR_UNAVAILABLE;
			goto out;
		}
	}

	/* Connect per transport, then keep only the transports in use. */
	for (unsigned t = 0; t < ntp && t < OHC_MAX_TRANSPORTS; t++) {
		unsigned n = 0;

		if (!open[t])
			continue;
		for (uint32_t r = 0; r < comm->nranks; r++)
			if (comm->eps[r] && comm->eps[r]->iface == open[t])
				eps_by_tp[n++] = comm->eps[r];
		if (!n) {
			open[t]->ops->iface_close(open[t]);
			free(open[t]);
			open[t] = NULL;
			continue;
		}
		status = open[t]->ops->iface_connect(open[t], eps_by_tp, n,
						     deadline);
		if (status < 0)
			goto out;
		comm->ifaces[comm->nifaces++] = open[t];
		if (open[t]->ops->caps & OHC_TP_CAP_REMOTE_HOST)
			comm->link_class = OHC_LINK_RDMA;
		else if ((open[t]->ops->caps & OHC_TP_CAP_SAME_HOST) &&
			 comm->link_class < OHC_LINK_SHM)
			comm->link_class = OHC_LINK_SHM;
		open[t] = NULL;
	}

out:
	for (unsigned t = 0; t < OHC_MAX_TRANSPORTS; t++) {
		if (!open[t])
			continue;
		for (uint32_t r = 0; comm->eps && r < comm->nranks; r++) {
			if (comm->eps[r] && comm->eps[r]->iface == open[t]) {
				open[t]->ops->ep_fini(comm->eps[r]);
				free(comm->eps[r]);
				comm->eps[r] = NULL;
			}
		}
		open[t]->ops->iface_close(open[t]);
		free(open[t]);
	}
	free(recs);
	free(eps_by_tp);
	return status;
}

/* How long an idle rank polls before it sleeps (core/wait.h decides,
 * from the ranks of this host). */
static void comm_choose_spin(struct ohc_comm *comm)
{
	const char *me = ohc_bootstrap_hostid(comm->bs, comm->rank);
	uint32_t local = 0;

	for (uint32_t r = 0; r < comm->nranks; r++)
		if (!strcmp(ohc_bootstrap_hostid(comm->bs, r), me))
			local++;
	comm->spin_ns = ohc_wait_spin_ns(ohc_env()->spin_us, local);
}

/*
 * Host layout for two-level algorithms: host indices in order of first
 * appearance by rank, the same on every rank. One host: no layout.
 */
static ohc_status_t comm_map_hosts(struct ohc_comm *comm)
{
	uint32_t n = comm->nranks, nhosts = 0;
	uint32_t *host_of = malloc(n * sizeof(*host_of));

	if (!host_of)
		return OHC_ERR_NO_MEMORY;
	for (uint32_t r = 0; r < n; r++) {
		const char *id = ohc_bootstrap_hostid(comm->bs, r);
		uint32_t q = 0;

		while (q < r && strcmp(ohc_bootstrap_hostid(comm->bs, q), id))
			q++;
		host_of[r] = q < r ? host_of[q] : nhosts++;
	}
	if (nhosts < 2) {
		free(host_of);
		host_of = NULL;
	}
	comm->host_of = host_of;
	comm->nhosts = nhosts;
	return OHC_OK;
}

ohc_status_t ohc_comm_create(struct ohc_bootstrap *bs,
			     const struct ohc_comm_cfg *cfg,
			     const char *default_name, int device,
			     struct ohc_comm **comm_p)
{
	const struct ohc_env *env = ohc_env();
	struct ohc_comm *comm;
	uint64_t session = 0, deadline;
	ohc_status_t status;

	comm = calloc(1, sizeof(*comm));
	if (!comm)
		return OHC_ERR_NO_MEMORY;
	comm->bs = bs;
	comm->rank = ohc_bootstrap_rank(bs);
	comm->nranks = ohc_bootstrap_nranks(bs);
	comm->device = device >= 0 ? device : ohc_rt_current_device();
	comm->cfg = *cfg;
	snprintf(comm->name, sizeof(comm->name), "%s",
		 cfg->name[0] ? cfg->name : default_name);
	ohc_list_init(&comm->link);
	pthread_mutex_init(&comm->lock, NULL);
	{
		pthread_condattr_t ca; /* ohc_comm_wait_idle's clock */

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&comm->idle_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	pthread_mutex_init(&comm->exec_lock, NULL);
	if (ohc_comm_name_taken(comm->name, comm->rank)) {
		OHC_ERROR(OHC_SS_INIT,
			  "communicator name '%s' is already used by rank %u "
			  "in this process",
			  comm->name, comm->rank);
		status = OHC_ERR_INVALID;
		goto err_free;
	}

	deadline =
		ohc_deadline_after_ms((uint64_t)env->connect_timeout_s * 1000);
	/* A session token shared by the ranks, unique per communicator. */
	if (comm->rank == 0 &&
	    getrandom(&session, sizeof(session), 0) != sizeof(session))
		session = ohc_time_ns() ^ ((uint64_t)getpid() << 32);
	status = ohc_bootstrap_bcast(bs, &session, sizeof(session), 0);
	if (status < 0)
		goto err_free;
	status = ohc_comm_transports_open(comm, session, deadline);
	if (status < 0)
		goto err_free;
	comm_choose_spin(comm);
	status = comm_map_hosts(comm);
	if (status < 0)
		goto err_free;
	/* Everyone connected before anyone sends data. */
	status = ohc_bootstrap_barrier(bs);
	if (status < 0)
		goto err_free;

	ohc_comm_flight_arm();
	pthread_mutex_lock(&registry_lock);
	status = handle_add_locked(comm);
	if (status == OHC_OK)
		ohc_list_add_tail(&registry, &comm->link);
	pthread_mutex_unlock(&registry_lock);
	if (status < 0)
		goto err_free;
	OHC_INFO(OHC_SS_INIT,
		 "rank %u/%u: communicator '%s' ready (%u "
		 "transports)",
		 comm->rank, comm->nranks, comm->name, comm->nifaces);
	*comm_p = comm;
	return OHC_OK;

err_free:
	comm->bs = NULL; /* still the caller's */
	comm_free(comm);
	return status;
}

void ohc_comm_stats(struct ohc_comm *comm, struct ohc_xfer_stats *stats_p)
{
	for (int i = 0; i < OHC_PATH_N; i++) {
		stats_p->bytes[i] = __atomic_load_n(&comm->stats.bytes[i],
						    __ATOMIC_RELAXED);
		stats_p->msgs[i] =
			__atomic_load_n(&comm->stats.msgs[i], __ATOMIC_RELAXED);
	}
}

int ohc_comm_wait_idle(struct ohc_comm *comm, uint64_t timeout_ms)
{
	uint64_t deadline = ohc_time_ns() + timeout_ms * 1000000ull;
	struct timespec ts;
	int rc = 0;

	ts.tv_sec = (time_t)(deadline / 1000000000ull);
	ts.tv_nsec = (long)(deadline % 1000000000ull);
	pthread_mutex_lock(&comm->lock);
	while (__atomic_load_n(&comm->inflight, __ATOMIC_ACQUIRE) && rc == 0)
		if (pthread_cond_timedwait(&comm->idle_cond, &comm->lock,
					   &ts) == ETIMEDOUT)
			rc = -1;
	if (!__atomic_load_n(&comm->inflight, __ATOMIC_ACQUIRE))
		rc = 0;
	pthread_mutex_unlock(&comm->lock);
	return rc;
}

void ohc_comm_destroy(struct ohc_comm *comm)
{
	const struct ohc_xfer_stats *st = &comm->stats;

	pthread_mutex_lock(&comm->lock);
	while (__atomic_load_n(&comm->inflight, __ATOMIC_ACQUIRE))
		pthread_cond_wait(&comm->idle_cond, &comm->lock);
	pthread_mutex_unlock(&comm->lock);
	OHC_INFO(OHC_SS_MEM,
		 "rank %u: communicator '%s' received %llu bytes staged, "
		 "%llu direct (CMA/same process), %llu zero-copy, %llu "
		 "zero-copy into a landing buffer; schedules built %llu "
		 "times, reused %llu times",
		 comm->rank, comm->name,
		 (unsigned long long)st->bytes[OHC_PATH_STAGED],
		 (unsigned long long)st->bytes[OHC_PATH_DIRECT],
		 (unsigned long long)st->bytes[OHC_PATH_ZC],
		 (unsigned long long)st->bytes[OHC_PATH_LANDING],
		 (unsigned long long)comm->plans.misses,
		 (unsigned long long)comm->plans.hits);
	ohc_zc_owner_release(comm);
	if (comm->refused > 1)
		OHC_WARN(OHC_SS_COLL,
			 "rank %u: communicator '%s': %llu operations were "
			 "refused after it failed (%s)",
			 comm->rank, comm->name,
			 (unsigned long long)comm->refused,
			 ohc_status_str(comm->failed));

	pthread_mutex_lock(&registry_lock);
	ohc_list_del(&comm->link);
	handle_remove_locked(comm);
	pthread_mutex_unlock(&registry_lock);

	ohc_comm_transports_close(comm);
	if (comm->bs)
		ohc_bootstrap_destroy(comm->bs);
	comm->bs = NULL;
	comm_free(comm);
}

ohc_status_t ohc_comm_async_error(struct ohc_comm *comm)
{
	return __atomic_load_n(&comm->async_error, __ATOMIC_ACQUIRE);
}

/* Mark the communicator failed; the first error sticks. */
void ohc_comm_fail(struct ohc_comm *comm, ohc_status_t status)
{
	int expected = 0;

	if (__atomic_compare_exchange_n(&comm->failed, &expected, (int)status,
					0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		/* Peers blocked on us fail now rather than at their timeout. */
		for (unsigned i = 0; i < comm->nifaces; i++)
			comm->ifaces[i]->ops->iface_abort(comm->ifaces[i],
							  status);
	}
	if (status == OHC_ERR_REMOTE || status == OHC_ERR_TIMEOUT ||
	    status == OHC_ERR_DESYNC) {
		expected = 0;
		__atomic_compare_exchange_n(&comm->async_error, &expected,
					    (int)status, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE);
	}
}

/*
 * An operation on a failed communicator fails at once with the first
 * error. Only the first refusal is logged (the failure itself was, where
 * it was detected); the rest are counted and the count is logged at
 * destroy: a program that keeps calling after a peer died must not write
 * a line per call.
 */
static ohc_status_t comm_refuse(struct ohc_comm *comm, enum ohc_coll_op op,
				int failed)
{
	if (__atomic_fetch_add(&comm->refused, 1, __ATOMIC_RELAXED) == 0)
		OHC_ERROR(OHC_SS_COLL,
			  "rank %u: %s on communicator '%s' refused: %s; "
			  "later operations on it fail the same way, counted "
			  "but not logged",
			  comm->rank, ohc_coll_op_name(op), comm->name,
			  failed == OHC_ERR_SUSPENDING
				  ? "the communicator is suspended "
				    "(HcclCommSuspend)"
				  : ohc_status_str(failed));
	return failed;
}

/*
 * Zero-copy (src/zerocopy/README.md): the byte extents of an op's input
 * and output, for the ops that may run on exported memory.
 */
static int op_extents(const struct ohc_coll_args *a, size_t *slen_p,
		      size_t *rlen_p)
{
	size_t v = (size_t)a->count * a->esize;

	switch (a->op) {
	case OHC_COLL_ALLREDUCE:
	case OHC_COLL_BROADCAST:
		*slen_p = *rlen_p = v;
		return 1;
	case OHC_COLL_ALLGATHER:
		*slen_p = v;
		*rlen_p = v * a->nranks;
		return 1;
	case OHC_COLL_REDUCE_SCATTER:
		*slen_p = v * a->nranks;
		*rlen_p = v;
		return 1;
	case OHC_COLL_ALLTOALL:
		*slen_p = *rlen_p = v * a->nranks;
		return 1;
	default:
		return 0;
	}
}

/*
 * Ops on exported memory use algorithms that send only out of the user's
 * buffers (no scratch), so that every message can go zero-copy (shm peers
 * read the sender's memory, verbs rendezvous writes into the receiver's);
 * the usual selection when those decline or when HCCL_ALGO says
 * otherwise. Over RDMA that selection builds unsliced: a pipeline slice
 * below OPENHCCL_RDMA_RNDV_KB would travel through the slots.
 */
static ohc_status_t comm_build(struct ohc_op *op, struct ohc_sched *s,
			       const struct ohc_algo **algo_p)
{
	const struct ohc_coll_args *a = &op->args;
	const struct ohc_algo *pick = NULL;
	struct ohc_coll_args unsliced;

	if (op->zc.n && !(a->algo_override && a->algo_override[0])) {
		switch (a->op) {
		case OHC_COLL_ALLREDUCE:
			pick = &ohc_algo_allreduce_ring;
			break;
		case OHC_COLL_ALLGATHER:
			pick = &ohc_algo_allgather_ring;
			break;
		case OHC_COLL_REDUCE_SCATTER:
			pick = &ohc_algo_reduce_scatter_direct;
			break;
		case OHC_COLL_ALLTOALL:
			pick = &ohc_algo_alltoall_pairwise;
			break;
		default:
			break;
		}
	}
	if (pick && (!pick->accepts || pick->accepts(a) == OHC_OK) &&
	    pick->build(a, s) == OHC_OK) {
		*algo_p = pick;
		return OHC_OK;
	}
	if (pick) { /* declined: start over with the usual selection */
		ohc_sched_fini(s);
		ohc_sched_init(s);
	}
	if (op->zc.n && a->link == OHC_LINK_RDMA && !a->pipeline_slices) {
		unsliced = *a;
		unsliced.pipeline_slices = 1;
		a = &unsliced;
	}
	return ohc_algo_build(a, s, algo_p);
}

/*
 * Large scratch (recursive halving's partials, say) is kept for the next
 * schedule instead of freed: a fresh allocation of megabytes comes from
 * mmap, and every op then faulted its pages in again (a quarter of a
 * 4 MiB ReduceScatter's time at 4 ranks). The largest is kept, up to
 * SPARE_MAX, and offered to the next build (ohc_sched_offer). Under
 * exec_lock.
 */
#define SPARE_MIN ((size_t)128 << 10)
#define SPARE_MAX ((size_t)256 << 20)

static void scratch_keep(struct ohc_comm *comm, struct ohc_sched *s)
{
	if (!s->scratch || s->scratch_cap < SPARE_MIN ||
	    s->scratch_cap > SPARE_MAX || s->scratch_cap <= comm->spare_bytes)
		return;
	free(comm->spare);
	comm->spare = s->scratch;
	comm->spare_bytes = s->scratch_cap;
	s->scratch = NULL;
	s->scratch_bytes = s->scratch_cap = 0;
}

/*
 * Profiling (only while ohc_rt_prof_on()). comm_execute notes the
 * algorithm and the ranks the schedule sends to or receives from (in
 * order of first use) for the thread that runs the op; the op's record
 * is filled right after, on that thread (the runtime's describe call, or
 * op_run_profiled), so the note needs no room in struct ohc_op. Peers at
 * or above PROF_PEER_BITS are deduplicated among the listed ones only, so
 * at those rank counts npeers may count one twice.
 */
#define PROF_PEER_BITS 4096u
struct prof_note {
	const struct ohc_op *op; /* the op noted */
	const char *algo;
	uint32_t npeers;
	uint32_t peers[OHC_RT_PROF_PEERS];
};
static __thread struct prof_note prof_note;

static void op_prof_note(const struct ohc_op *op, const struct ohc_algo *algo,
			 const struct ohc_sched *run)
{
	struct prof_note *pn = &prof_note;
	uint64_t seen[PROF_PEER_BITS / 64];
	uint32_t n = 0;

	/* clear what the communicator's ranks can use */
	memset(seen, 0,
	       (OHC_MIN(op->args.nranks, PROF_PEER_BITS) + 63) / 64 * 8);
	pn->op = op;
	pn->algo = algo ? algo->name : NULL;
	for (unsigned i = 0; i < run->nxfers; i++) {
		const struct ohc_xfer *x = &run->xfers[i];
		uint32_t p = x->peer;
		bool dup = false;

		if ((x->kind != OHC_XFER_SEND && x->kind != OHC_XFER_RECV) ||
		    p == op->args.rank)
			continue;
		if (p < PROF_PEER_BITS) {
			dup = seen[p / 64] & (1ull << (p % 64));
			seen[p / 64] |= 1ull << (p % 64);
		} else {
			for (uint32_t j = 0; j < n && j < OHC_RT_PROF_PEERS;
			     j++)
				dup = dup || pn->peers[j] == p;
		}
		if (dup)
			continue;
		if (n < OHC_RT_PROF_PEERS)
			pn->peers[n] = p;
		n++;
	}
	pn->npeers = n;
}

/* What the profile records of an op (the runtime filled times and place). */
static void op_prof_fill(const struct ohc_op *op, struct ohc_rt_prof_rec *rec)
{
	struct ohc_comm *comm = op->comm;
	const struct prof_note *pn = &prof_note;
	const char *name = __atomic_load_n(&comm->prof_name, __ATOMIC_ACQUIRE);

	if (!name) { /* once per communicator; the same pointer if raced */
		name = ohc_rt_prof_intern(comm->name);
		__atomic_store_n(&comm->prof_name, name, __ATOMIC_RELEASE);
	}
	rec->kind = OHC_RT_PROF_HCCL;
	rec->name = ohc_coll_api_name(op->args.op);
	rec->comm = name;
	rec->bytes = ohc_coll_bytes(&op->args);
	rec->seq = op->sig.seq;
	rec->rank = (int32_t)op->args.rank;
	rec->nranks = (int32_t)op->args.nranks;
	if (pn->op == op) { /* not when it failed before building */
		uint32_t n = OHC_MIN(pn->npeers, (uint32_t)OHC_RT_PROF_PEERS);

		rec->algo = pn->algo;
		rec->npeers = (uint16_t)OHC_MIN(pn->npeers, 0xffffu);
		memcpy(rec->peers, pn->peers, n * sizeof(rec->peers[0]));
		prof_note.op = NULL;
	}
}

static void op_task_describe(const struct ohc_rt_task *task,
			     struct ohc_rt_prof_rec *rec)
{
	op_prof_fill((const struct ohc_op *)task, rec);
}

static ohc_status_t comm_execute(struct ohc_comm *comm, struct ohc_op *op)
{
	const struct ohc_algo *algo = NULL;
	struct ohc_xfer_stats st = {{0}, {0}};
	struct ohc_plan_key key;
	struct ohc_plan *plan;
	struct ohc_sched s, *run;
	struct ohc_exec x;
	int cacheable;
	ohc_status_t status;
	int failed;
	OHC_LOG_SCOPE(comm->name, (int)comm->rank);

	pthread_mutex_lock(&comm->exec_lock);
	failed = __atomic_load_n(&comm->failed, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&comm->suspended, __ATOMIC_ACQUIRE))
		failed = OHC_ERR_SUSPENDING;
	if (failed) {
		status = comm_refuse(comm, op->args.op, failed);
		goto out;
	}
	op->args.host_of = comm->host_of;
	op->args.nhosts = comm->nhosts;
	cacheable = ohc_plan_key_of(&op->args, op->zc.n != 0, &key);
	plan = cacheable ? ohc_plan_cache_find(&comm->plans, &key) : NULL;
	if (plan) {
		run = &plan->sched;
		algo = plan->algo;
	} else {
		ohc_sched_init(&s);
		ohc_sched_offer(comm->spare, comm->spare_bytes);
		status = comm_build(op, &s, &algo);
		if (!ohc_sched_offer_end()) { /* taken (or none): not ours */
			comm->spare = NULL;
			comm->spare_bytes = 0;
		}
		if (status < 0) {
			ohc_sched_fini(&s);
			goto out;
		}
		plan = cacheable ? ohc_plan_cache_insert(&comm->plans, &key,
							 algo, &s)
				 : NULL;
		run = plan ? &plan->sched : &s;
	}
	memset(&x, 0, sizeof(x));
	x.rank = comm->rank;
	x.nranks = comm->nranks;
	x.eps = comm->eps;
	x.ifaces = comm->ifaces;
	x.nifaces = comm->nifaces;
	/* second-scale: the coarse clock (no clocksource read per op) */
	x.deadline =
		comm->cfg.exec_timeout_s
			? ohc_deadline_coarse_after_ms(
				  (uint64_t)comm->cfg.exec_timeout_s * 1000)
			: OHC_DEADLINE_NEVER;
	x.spin_ns = comm->spin_ns;
	x.abort_flag = &comm->abort_flag;
	x.reduce = ohc_reduce_get(op->args.dtype, op->args.redop);
	x.esize = (unsigned)op->args.esize;
	x.sig = op->sig;
	x.what = ohc_coll_op_name(op->args.op);
	x.stats = &st;
	x.err_peer = OHC_FLIGHT_NO_PEER;
	x.flight = ohc_flight_begin(
		&comm->flight, op->sig.seq, x.what, algo ? algo->name : NULL,
		op->args.count * op->args.esize, run->nsteps);
	if (OHC_UNLIKELY(ohc_rt_prof_on()))
		op_prof_note(op, algo, run);
	if (op->zc.n) {
		x.mem_lookup = ohc_zc_mem_lookup;
		x.mem_ctx = &op->zc;
	}
	status = ohc_exec_run(&x, run);
	ohc_flight_end(x.flight, status);
	if (run == &s) {
		scratch_keep(comm, &s);
		ohc_sched_fini(&s);
	}
	for (int i = 0; i < OHC_PATH_N; i++) {
		if (!st.msgs[i]) /* most ops use one path: skip the others */
			continue;
		__atomic_fetch_add(&comm->stats.bytes[i], st.bytes[i],
				   __ATOMIC_RELAXED);
		__atomic_fetch_add(&comm->stats.msgs[i], st.msgs[i],
				   __ATOMIC_RELAXED);
	}
	if (status < 0 && __atomic_load_n(&comm->suspended, __ATOMIC_ACQUIRE))
		status = OHC_ERR_SUSPENDING; /* canceled by HcclCommSuspend */
	/* The first failure of a peer or of time: show what led to it. */
	if ((status == OHC_ERR_TIMEOUT || status == OHC_ERR_REMOTE ||
	     status == OHC_ERR_DESYNC) &&
	    !__atomic_load_n(&comm->failed, __ATOMIC_ACQUIRE))
		ohc_comm_flight_dump(comm);
	if (status < 0)
		ohc_comm_fail(comm, status);
out:
	pthread_mutex_unlock(&comm->exec_lock);
	return status;
}

/*
 * The last decrement (to zero) stays under the lock: a destroy waiting
 * for idleness may free the communicator as soon as it sees zero, so the
 * last op out must be done with the lock by then. Any other decrement
 * leaves an op in flight, which keeps the communicator alive, and needs
 * no lock. (Launching only increments, lock-free.)
 */
static void op_done(struct ohc_comm *comm)
{
	unsigned n = __atomic_load_n(&comm->inflight, __ATOMIC_RELAXED);

	while (n > 1)
		if (__atomic_compare_exchange_n(&comm->inflight, &n, n - 1, 0,
						__ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			return;
	pthread_mutex_lock(&comm->lock);
	if (__atomic_sub_fetch(&comm->inflight, 1, __ATOMIC_ACQ_REL) == 0)
		pthread_cond_broadcast(&comm->idle_cond);
	pthread_mutex_unlock(&comm->lock);
}

/* The aclError a stream reports for an op's status. */
static int op_status_rt(ohc_status_t status)
{
	switch (status) {
	case OHC_OK:
		return 0;
	case OHC_ERR_TIMEOUT:
		return OHC_RT_ERR_TASK_TIMEOUT;
	case OHC_ERR_REMOTE:
	case OHC_ERR_CANCELED:
		return OHC_RT_ERR_LINK;
	case OHC_ERR_DESYNC:
	case OHC_ERR_INVALID:
		return OHC_RT_ERR_PARAM;
	default:
		return OHC_RT_ERR_INTERNAL;
	}
}

static int op_task_run(struct ohc_rt_task *task)
{
	struct ohc_op *op = (struct ohc_op *)task;
	ohc_status_t status;

	if (op->notify)
		op->notify->start(op->notify_arg, op->notify_tag);
	status = comm_execute(op->comm, op);
	if (op->notify) {
		op->notified = true;
		op->notify->done(op->notify_arg, op->notify_tag, status);
	}
	return op_status_rt(status);
}

/* An op without a stream, run here and recorded (profile running). */
static ohc_status_t op_run_profiled(struct ohc_comm *comm, struct ohc_op *op)
{
	struct ohc_rt_prof_rec rec;
	ohc_status_t status;

	memset(&rec, 0, sizeof(rec));
	rec.start_ns = ohc_time_ns();
	status = comm_execute(comm, op);
	rec.end_ns = ohc_time_ns();
	rec.enq_ns = rec.start_ns;
	rec.status = status == OHC_OK ? 0 : op_status_rt(status);
	rec.dev = -1; /* the thread's current device */
	op_prof_fill(op, &rec);
	ohc_rt_prof_record(&rec);
	return status;
}

static void op_task_release(struct ohc_rt_task *task)
{
	struct ohc_op *op = (struct ohc_op *)task;
	struct ohc_comm *comm = op->comm;

	if (op->notify && !op->notified) /* skipped by its stream */
		op->notify->done(op->notify_arg, op->notify_tag,
				 OHC_ERR_CANCELED);
	ohc_zc_unpin(&op->zc);
	op_free(comm, op); /* before op_done: comm may go right after */
	op_done(comm);
}

/*
 * Allocate an operation and take copies of everything the caller may reuse
 * once the call returns (count/displacement arrays, batch items): the
 * schedule is built later, on the stream.
 */
struct ohc_op *ohc_op_alloc(struct ohc_comm *comm,
			    const struct ohc_coll_args *args)
{
	const uint64_t *const *arrays[4] = {
		&args->send_counts, &args->send_displs, &args->recv_counts,
		&args->recv_displs};
	size_t vbytes = (size_t)comm->nranks * sizeof(uint64_t), tail = 0;
	struct ohc_op *op;
	char *p;

	for (int i = 0; i < 4; i++)
		if (*arrays[i])
			tail += vbytes;
	tail += (size_t)args->nitems * sizeof(*args->items);
	op = tail ? NULL : op_pool_take(comm);
	if (op) {
		memset(op, 0, sizeof(*op));
		op->pooled = true;
	} else if (!(op = calloc(1, sizeof(*op) + tail))) {
		return NULL;
	}
	op->comm = comm;
	op->args = *args;
	p = op->tail;
	if (args->send_counts) {
		op->args.send_counts = memcpy(p, args->send_counts, vbytes);
		p += vbytes;
	}
	if (args->send_displs) {
		op->args.send_displs = memcpy(p, args->send_displs, vbytes);
		p += vbytes;
	}
	if (args->recv_counts) {
		op->args.recv_counts = memcpy(p, args->recv_counts, vbytes);
		p += vbytes;
	}
	if (args->recv_displs) {
		op->args.recv_displs = memcpy(p, args->recv_displs, vbytes);
		p += vbytes;
	}
	if (args->nitems)
		op->args.items = memcpy(p, args->items,
					args->nitems * sizeof(*args->items));
	op->args.rank = comm->rank;
	op->args.nranks = comm->nranks;
	op->args.deterministic =
		__atomic_load_n(&comm->cfg.deterministic, __ATOMIC_ACQUIRE);
	op->args.link = comm->link_class;
	op->args.algo_override = comm->cfg.algo;
	op->args.pipeline_slices = (uint32_t)ohc_env()->pipeline_slices;
	op->task.run = op_task_run;
	op->task.release = op_task_release;
	op->task.describe = op_task_describe;
	op->task.name = ohc_coll_op_name(args->op);
	return op;
}

static int op_is_p2p(enum ohc_coll_op op)
{
	return op == OHC_COLL_SEND || op == OHC_COLL_RECV ||
	       op == OHC_COLL_BATCH_SEND_RECV;
}

ohc_status_t ohc_op_launch(struct ohc_op *op, void *stream)
{
	struct ohc_comm *comm = op->comm;
	const struct ohc_coll_args *args = &op->args;
	size_t slen = 0, rlen = 0;
	ohc_status_t status;
	int ret;

	if (op_is_p2p(args->op)) {
		/*
		 * Point-to-point messages match in FIFO order per pair and may
		 * be batched with other counts and types: only the kind and
		 * the length (checked per message) must agree.
		 */
		op->sig.op = OHC_COLL_SEND;
	} else {
		op->sig.op = (uint8_t)args->op;
		op->sig.dtype = (uint8_t)args->dtype;
		op->sig.redop = (uint8_t)args->redop;
		op->sig.root = args->root;
		/* V variants' local counts differ by design */
		op->sig.count = args->send_counts || args->recv_counts
					? 0
					: args->count;
	}

	/* lock-free: the stream worker finishing ops does not contend */
	if (!op_is_p2p(args->op))
		op->sig.seq = __atomic_fetch_add(&comm->coll_seq, 1,
						 __ATOMIC_RELAXED);
	__atomic_fetch_add(&comm->inflight, 1, __ATOMIC_ACQ_REL);
	/* Exported buffers stay pinned until the op is done. */
	if (op_extents(args, &slen, &rlen))
		ohc_zc_pin(args->sbuf, slen, args->rbuf, rlen, &op->zc);

	if (!stream) {
		if (OHC_UNLIKELY(ohc_rt_prof_on()))
			status = op_run_profiled(comm, op);
		else
			status = comm_execute(comm, op);
		ohc_zc_unpin(&op->zc);
		op_free(comm, op);
		op_done(comm);
		return status;
	}
	ret = ohc_rt_stream_submit(stream, &op->task);
	if (ret != 0) {
		OHC_ERROR(OHC_SS_API,
			  "cannot enqueue %s on stream %p (acl "
			  "error %d)",
			  op->task.name, stream, ret);
		ohc_zc_unpin(&op->zc);
		op_free(comm, op);
		op_done(comm);
		return OHC_ERR_INVALID;
	}
	return OHC_OK;
}

ohc_status_t ohc_comm_submit(struct ohc_comm *comm,
			     const struct ohc_coll_args *args, void *stream)
{
	int failed = __atomic_load_n(&comm->failed, __ATOMIC_ACQUIRE);
	struct ohc_op *op;

	if (__atomic_load_n(&comm->suspended, __ATOMIC_ACQUIRE))
		return comm_refuse(comm, args->op, OHC_ERR_SUSPENDING);
	if (failed)
		return comm_refuse(comm, args->op, failed);
	op = ohc_op_alloc(comm, args);
	if (!op)
		return OHC_ERR_NO_MEMORY;
	if (ohc_group_depth() > 0)
		return ohc_group_add(op, stream);
	return ohc_op_launch(op, stream);
}
