/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs service thread: one per process while any verbs iface is
 * connected. It watches what may need an answer while no operation of
 * that iface's communicator runs: the setup sockets (a peer's replay
 * handshake, its abort, its end) and the async-event fd (a port going
 * down). When one of them stirs, or while a replay runs, it takes the
 * iface's lock if nobody holds it (trylock: an owner inside an operation
 * answers by itself) and services it (service_locked); then it wakes the
 * iface, so that a rank asleep in iface_wait looks again.
 *
 * Without it, a replay could wait for a peer busy in an operation of
 * another communicator, which itself waits for us: each rank of a job
 * runs operations on several communicators, one at a time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "transport/verbs/verbs.h"
#include "util/list.h"
#include "util/log.h"

struct svc {
	pthread_t thread;
	int wake_fd;
	int stop; /* under reg_lock */
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ohc_list reg = OHC_LIST_INIT(reg); /* of ohc_verbs_iface */
static struct svc *running;			 /* under reg_lock */
static pid_t running_pid;

/* fds to watch, with their iface (index-aligned) */
struct watch {
	struct pollfd *pfd;
	struct ohc_verbs_iface **owner;
	size_t n, cap;
};

static int watch_add_ev(struct watch *w, int fd, short events,
			struct ohc_verbs_iface *vi)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		struct pollfd *p = realloc(w->pfd, cap * sizeof(*p));
		struct ohc_verbs_iface **o;

		if (!p)
			return -1;
		w->pfd = p;
		o = realloc(w->owner, cap * sizeof(*o));
		if (!o)
			return -1;
		w->owner = o;
		w->cap = cap;
	}
	w->pfd[w->n] = (struct pollfd){.fd = fd, .events = events};
	w->owner[w->n++] = vi;
	return 0;
}

static int watch_add(struct watch *w, int fd, struct ohc_verbs_iface *vi)
{
	return watch_add_ev(w, fd, POLLIN, vi);
}

/*
 * The fds to watch for an iface (setup sockets, the async-event fd),
 * skipped when the iface is in use: its owner watches for itself.
 * Returns whether a replay runs (it needs steps).
 */
static int service_fds(struct ohc_verbs_iface *vi, struct watch *w)
{
	int busy = 0;

	if (pthread_mutex_trylock(&vi->lock))
		return 0; /* in use: its owner watches for itself */
	for (uint32_t r = 0; r <= vi->super.nranks; r++) {
		struct ohc_verbs_ep *e =
			r < vi->super.nranks ? vi->by_peer[r] : NULL;
		int fd = r == vi->super.nranks ? vi->ctx->async_fd : -1;

		if (e && e->connected && !e->broken && !e->peer_abort &&
		    !e->closed_at) /* at EOF: readable for ever */
			fd = e->sock;
		busy |= e && e->rp.state;
		if (fd < 0)
			continue;
		if (watch_add(w, fd, vi))
			break;
	}
	/* connections on first use: the listener, attempts, accepted
	 * sockets (a peer's hello is answered while we are idle) */
	if (vi->lazy && vi->lz_svc_fds) {
		struct pollfd *p = vi->lz_svc_fds;
		unsigned np = ohc_vx_lazy_fds(vi, p);

		for (unsigned k = 0; k < np; k++)
			if (watch_add_ev(w, p[k].fd, p[k].events, vi))
				break;
		busy |= vi->lz_busy != 0; /* deadlines, retries */
	}
	pthread_mutex_unlock(&vi->lock);
	return busy;
}

/* Whether a replay runs on the iface (read without its lock). */
static int service_busy(struct ohc_verbs_iface *vi)
{
	if (__atomic_load_n(&vi->lz_busy, __ATOMIC_RELAXED))
		return 1;
	for (uint32_t r = 0; r < vi->super.nranks; r++)
		if (vi->by_peer[r] && __atomic_load_n(&vi->by_peer[r]->rp.state,
						      __ATOMIC_RELAXED))
			return 1;
	return 0;
}

/* One round of service, vi->lock held: events, sockets, replays; then
 * the iface is woken. */
static void service_locked(struct ohc_verbs_iface *vi)
{
	int replaying = 0;

	ohc_vx_async_events(vi);
	ohc_vx_lazy_progress(vi); /* answer hellos, drive attempts */
	for (uint32_t r = 0; r < vi->super.nranks; r++) {
		struct ohc_verbs_ep *e = vi->by_peer[r];

		if (!e || !e->connected || e->broken || e->closed_at)
			continue; /* closed: the owner's waits decide */
		ohc_vx_ep_sock_check(e);
		replaying |= e->rp.state != VX_RP_NONE;
	}
	if (replaying) {
		ohc_vx_cq_poll(vi);
		for (uint32_t r = 0; r < vi->super.nranks; r++) {
			struct ohc_verbs_ep *e = vi->by_peer[r];

			if (e && e->rp.state && !e->broken)
				ohc_vx_replay_progress(vi, e);
		}
	}
	ohc_vx_iface_wake(&vi->super); /* a sleeping owner looks again */
}

static int registered_locked(const struct ohc_verbs_iface *vi)
{
	struct ohc_list *pos;

	ohc_list_for_each(pos, &reg)
	{
		if (ohc_container_of(pos, struct ohc_verbs_iface, svc_link) ==
		    vi)
			return 1;
	}
	return 0;
}

static void *svc_main(void *arg)
{
	struct svc *s = arg;
	struct watch w = {0};

	for (;;) {
		struct ohc_list *pos;
		int busy = 0, missed = 0;
		uint64_t v;

		w.n = 0;
		pthread_mutex_lock(&reg_lock);
		if (s->stop) {
			pthread_mutex_unlock(&reg_lock);
			break;
		}
		if (watch_add(&w, s->wake_fd, NULL)) {
			/* no memory for the set: look again in a while (an
			 * fd a later watch_add could not add waits likewise) */
			pthread_mutex_unlock(&reg_lock);
			(void)poll(NULL, 0, 100);
			continue;
		}
		ohc_list_for_each(pos, &reg)
		{
			struct ohc_verbs_iface *vi = ohc_container_of(
				pos, struct ohc_verbs_iface, svc_link);

			busy |= service_fds(vi, &w);
		}
		pthread_mutex_unlock(&reg_lock);
		/* a replay in progress needs steps (markers, the port) even
		 * when no fd stirs */
		(void)poll(w.pfd, w.n, busy ? 10 : 1000);
		if (w.pfd[0].revents)
			(void)!read(s->wake_fd, &v, sizeof(v));
		pthread_mutex_lock(&reg_lock);
		ohc_list_for_each(pos, &reg)
		{
			struct ohc_verbs_iface *vi = ohc_container_of(
				pos, struct ohc_verbs_iface, svc_link);
			int stirred = 0;

			for (size_t k = 1; k < w.n; k++)
				stirred |= w.owner[k] == vi && w.pfd[k].revents;
			if (!stirred && !service_busy(vi))
				continue;
			if (pthread_mutex_trylock(&vi->lock)) {
				missed = 1; /* its owner is in it now */
				continue;
			}
			service_locked(vi);
			pthread_mutex_unlock(&vi->lock);
		}
		pthread_mutex_unlock(&reg_lock);
		if (missed)
			usleep(5000); /* the fds stay readable: no spinning */
	}
	free(w.pfd);
	free(w.owner);
	return NULL;
}

static struct svc *svc_start_locked(void)
{
	struct svc *s = calloc(1, sizeof(*s));
	sigset_t all, old;
	int rc;

	if (!s)
		return NULL;
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wake_fd < 0) {
		free(s);
		return NULL;
	}
	/* the thread takes no signals: they belong to the user's threads */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&s->thread, NULL, svc_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		close(s->wake_fd);
		free(s);
		return NULL;
	}
	return s;
}

void ohc_vx_service_add(struct ohc_verbs_iface *vi)
{
	pthread_mutex_lock(&reg_lock);
	if (running && running_pid != getpid()) {
		/* inherited through fork(): no thread behind it here */
		ohc_list_init(&reg);
		running = NULL;
	}
	ohc_list_add_tail(&reg, &vi->svc_link);
	if (!running) {
		running = svc_start_locked();
		running_pid = getpid();
		if (!running)
			OHC_WARN(OHC_SS_VERBS,
				 "rank %u: cannot start the verbs service "
				 "thread: replays need both sides in an "
				 "operation of the communicator",
				 vi->super.rank);
	} else {
		uint64_t one = 1;

		(void)!write(running->wake_fd, &one, sizeof(one));
	}
	pthread_mutex_unlock(&reg_lock);
}

void ohc_vx_service_del(struct ohc_verbs_iface *vi)
{
	struct svc *stop = NULL;

	pthread_mutex_lock(&reg_lock);
	if (!registered_locked(vi)) {
		pthread_mutex_unlock(&reg_lock);
		return;
	}
	ohc_list_del(&vi->svc_link);
	if (ohc_list_empty(&reg) && running && running_pid == getpid()) {
		uint64_t one = 1;

		stop = running;
		stop->stop = 1;
		(void)!write(stop->wake_fd, &one, sizeof(one));
		running = NULL;
	}
	pthread_mutex_unlock(&reg_lock);
	if (stop) { /* the last iface: no thread, no fd left behind */
		pthread_join(stop->thread, NULL);
		close(stop->wake_fd);
		free(stop);
	}
}
