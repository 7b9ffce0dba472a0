/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Communicator life cycle: the default configuration, create (collective:
 * session token, transports, spin and host layout, registry), destroy
 * (local: waits for its ops, then frees all), the sticky failure and
 * asynchronous error, the transfer counters and the wait for idleness.
 * The registry is comm_registry.c, transports comm_connect.c, the op pool
 * comm_oppool.c, operations comm_exec.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "comm/comm.h"
#include "comm/comm_int.h"
#include "core/wait.h"
#include "transport/transport.h"
#include "util/config.h"
#include "util/cpus.h"
#include "util/log.h"
#include "util/time.h"

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
	ohc_op_pool_fini(comm);
	free(comm);
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
	comm->spin_ns = ohc_wait_spin_ns(ohc_env()->spin_us);
	comm->yield_first = ohc_wait_oversubscribed(local);
	comm->local_ranks = local;
}

/*
 * Host layout for two-level algorithms: host indices in order of first
 * appearance by rank, the same on every rank. One host: no layout. And
 * the busiest host's rank count, which selection weighs against the
 * CPUs (comm->host_cpus).
 */
static ohc_status_t comm_map_hosts(struct ohc_comm *comm)
{
	uint32_t n = comm->nranks, nhosts = 0;
	uint32_t *host_of = malloc(n * sizeof(*host_of));
	uint32_t *ranks = calloc(n, sizeof(*ranks));

	if (!host_of || !ranks) {
		free(host_of);
		free(ranks);
		return OHC_ERR_NO_MEMORY;
	}
	comm->host_ranks = 0;
	for (uint32_t r = 0; r < n; r++) {
		const char *id = ohc_bootstrap_hostid(comm->bs, r);
		uint32_t q = 0;

		while (q < r && strcmp(ohc_bootstrap_hostid(comm->bs, q), id))
			q++;
		host_of[r] = q < r ? host_of[q] : nhosts++;
		ranks[host_of[r]]++;
		comm->host_ranks = OHC_MAX(comm->host_ranks, ranks[host_of[r]]);
	}
	free(ranks);
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
	uint64_t deadline;
	struct {
		uint64_t session;
		uint32_t cpus, pad;
	} hello = {0};
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
	/*
	 * A session token shared by the ranks, unique per communicator, and
	 * rank 0's CPU count: selection must price alike on every rank.
	 */
	if (comm->rank == 0) {
		if (getrandom(&hello.session, sizeof(hello.session), 0) !=
		    sizeof(hello.session))
			hello.session =
				ohc_time_ns() ^ ((uint64_t)getpid() << 32);
		hello.cpus = ohc_host_cpus();
	}
	status = ohc_bootstrap_bcast(bs, &hello, sizeof(hello), 0);
	if (status < 0)
		goto err_free;
	comm->host_cpus = hello.cpus;
	status = ohc_comm_transports_open(comm, hello.session, deadline);
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
	status = ohc_comm_registry_add(comm);
	if (status < 0)
		goto err_free;
	/* what waits and selection make of the host (scaling runs log it) */
	OHC_INFO(OHC_SS_INIT,
		 "rank %u/%u: communicator '%s' ready (%u transports; %u "
		 "ranks on this host's %u CPUs: waits %s first; selection "
		 "prices the busiest host's %u ranks on %u CPUs)",
		 comm->rank, comm->nranks, comm->name, comm->nifaces,
		 comm->local_ranks, ohc_host_cpus(),
		 comm->yield_first ? "yield" : "spin", comm->host_ranks,
		 comm->host_cpus);
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

/*
 * Wait, with comm->lock held, until no op is in flight or the monotonic
 * clock passes deadline_ns (0: never); whether it is idle. The last op
 * out wakes registered waiters, but one that saw no waiter just before
 * we registered does not (op_done): each wait is therefore a slice of at
 * most COMM_WAIT_SLICE_MS, after which inflight is looked at again.
 */
#define COMM_WAIT_SLICE_MS 5
static bool comm_wait_locked(struct ohc_comm *comm, uint64_t deadline_ns)
{
	__atomic_add_fetch(&comm->idle_waiters, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&comm->inflight, __ATOMIC_SEQ_CST)) {
		uint64_t now = ohc_time_ns(), until;
		struct timespec ts;

		if (deadline_ns && now >= deadline_ns)
			break;
		until = now + COMM_WAIT_SLICE_MS * 1000000ull;
		if (deadline_ns && until > deadline_ns)
			until = deadline_ns;
		ts.tv_sec = (time_t)(until / 1000000000ull);
		ts.tv_nsec = (long)(until % 1000000000ull);
		pthread_cond_timedwait(&comm->idle_cond, &comm->lock, &ts);
	}
	__atomic_sub_fetch(&comm->idle_waiters, 1, __ATOMIC_SEQ_CST);
	return !__atomic_load_n(&comm->inflight, __ATOMIC_ACQUIRE);
}

int ohc_comm_wait_idle(struct ohc_comm *comm, uint64_t timeout_ms)
{
	uint64_t deadline = ohc_time_ns() + timeout_ms * 1000000ull;
	bool idle;

	pthread_mutex_lock(&comm->lock);
	idle = comm_wait_locked(comm, deadline);
	pthread_mutex_unlock(&comm->lock);
	return idle ? 0 : -1;
}

void ohc_comm_destroy(struct ohc_comm *comm)
{
	const struct ohc_xfer_stats *st = &comm->stats;

	pthread_mutex_lock(&comm->lock);
	(void)comm_wait_locked(comm, 0);
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

	ohc_comm_registry_remove(comm);

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
