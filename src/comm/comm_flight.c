/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The flight recorder's triggers. Each communicator records its last
 * operations (core/flight.h); the record is written to the log when an
 * operation first fails on a timeout, a peer or a mismatch (so every rank
 * of a failed collective shows where it was: the one that timed out names
 * the rank it waited for, the others fail as its abort reaches them), and,
 * when OPENHCCL_FLIGHT_SIGNAL names a signal, each time the process gets
 * that signal (a hung job: `kill -USR1 <pid>` on every rank).
 *
 * The handler only writes a byte to a pipe; a thread started with the
 * handler (once per process, for its lifetime) reads it and dumps every
 * live communicator. A handler the program had for that signal is
 * replaced, with a warning.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm.h"
#include "util/config.h"
#include "util/log.h"

static int flight_pipe[2] = {-1, -1};
static pid_t armed_pid; /* the process that armed it (a fork re-arms) */
static pthread_mutex_t arm_lock = PTHREAD_MUTEX_INITIALIZER;

void ohc_comm_flight_dump(struct ohc_comm *comm)
{
	char who[OHC_COMM_NAME_MAX + 32];

	snprintf(who, sizeof(who), "rank %u of '%s'", comm->rank, comm->name);
	ohc_flight_dump(&comm->flight, who, NULL);
}

static void dump_one(struct ohc_comm *comm, void *arg)
{
	(void)arg;
	ohc_comm_flight_dump(comm);
}

static void on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	(void)!write(flight_pipe[1], &c, 1);
	errno = saved;
}

static void *watcher(void *arg)
{
	char c;

	(void)arg;
	for (;;) {
		ssize_t n = read(flight_pipe[0], &c, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return NULL;
		OHC_WARN(OHC_SS_COLL,
			 "signal %d (OPENHCCL_FLIGHT_SIGNAL): every "
			 "communicator's flight recorder follows",
			 (int)c);
		ohc_comm_for_each(dump_one, NULL);
	}
}

static void arm_locked(void)
{
	int sig = (int)ohc_env()->flight_signal;
	struct sigaction sa, old;
	sigset_t all, saved;
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	if (!sig)
		return;
	if (flight_pipe[0] >= 0) { /* the parent's, inherited by fork() */
		close(flight_pipe[0]);
		close(flight_pipe[1]);
		flight_pipe[0] = flight_pipe[1] = -1;
	}
	if (pipe2(flight_pipe, O_CLOEXEC)) {
		OHC_WARN(OHC_SS_COLL,
			 "OPENHCCL_FLIGHT_SIGNAL: pipe: %s; no dumps on a "
			 "signal",
			 strerror(errno));
		return;
	}
	/* The watcher takes no signals: they belong to the user's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, watcher, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (rc) {
		OHC_WARN(OHC_SS_COLL,
			 "OPENHCCL_FLIGHT_SIGNAL: cannot start the watcher "
			 "thread: %s; no dumps on a signal",
			 strerror(rc));
		close(flight_pipe[0]);
		close(flight_pipe[1]);
		flight_pipe[0] = flight_pipe[1] = -1;
		return;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, &old);
	if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)
		OHC_WARN(OHC_SS_COLL,
			 "OPENHCCL_FLIGHT_SIGNAL: signal %d had a handler of "
			 "the program; it dumps flight recorders now",
			 sig);
	OHC_INFO(
		OHC_SS_COLL,
		"signal %d dumps the flight recorders (OPENHCCL_FLIGHT_SIGNAL)",
		sig);
}

void ohc_comm_flight_arm(void)
{
	pid_t me = getpid();

	if (__atomic_load_n(&armed_pid, __ATOMIC_ACQUIRE) == me)
		return;
	pthread_mutex_lock(&arm_lock);
	if (armed_pid != me) {
		arm_locked();
		__atomic_store_n(&armed_pid, me, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&arm_lock);
}
