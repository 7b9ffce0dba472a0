/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TEST_TRANSPORT_HARNESS_H
#define OHC_TEST_TRANSPORT_HARNESS_H

/*
 * What the transport tests (test/transport/<name>.c) share: ranks that
 * drive a transport through its ops alone (transport/transport.h), with
 * no bootstrap. Address blobs travel through a MAP_SHARED page made by
 * the suite's init before any fork, so forked ranks (shm, verbs) and
 * thread ranks (self) meet there alike; so does the barrier.
 *
 * Rank functions make no Criterion calls (a forked rank _exit()s with its
 * result): they report with FAIL / CHECK, which print the transport, the
 * rank and the line, and return 1 from the function that holds a
 * struct tp_rank *c. What one transport checks on its own (mappings, MRs,
 * its parameters) stays in its own file.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "transport/transport.h"

/* Ranks a test may run; the shared page holds a blob for each. */
#define TP_MAXR 8

/* The part of the shared page every transport test uses. */
struct tp_shared {
	atomic_uint bar_count, bar_gen;
	uint64_t session; /* random per test: ifaces of other tests differ */
	size_t blob_len[TP_MAXR];
	unsigned char blob[TP_MAXR][OHC_ADDR_MAX];
};

extern struct tp_shared *tp_sh;

/*
 * For a suite's .init: map the shared page (zeroed, a fresh session) with
 * extra bytes of the test's own after it, also shared and zeroed; returns
 * those. Asserts. tp_teardown (.fini) unmaps it.
 */
void *tp_setup(size_t extra);
void tp_teardown(void);

/* Threads and processes alike: every one of nranks waits for the others
 * (sleeping, never spinning hard: ranks outnumber the cores). */
void tp_barrier(int nranks);

/* One rank's transport objects. */
struct tp_rank {
	int rank, nranks;
	const char *tp; /* transport name, in failure messages */
	const struct ohc_transport_ops *ops;
	struct ohc_iface *iface;
	struct ohc_ep *eps[TP_MAXR];
	int fds_before; /* open fds before iface_open */
};

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, "%s rank %d: ", c->tp, c->rank);               \
		fprintf(stderr, __VA_ARGS__);                                  \
		fprintf(stderr, " (%s:%d)\n", __FILE__, __LINE__);             \
		return 1;                                                      \
	} while (0)

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			FAIL(__VA_ARGS__);                                     \
	} while (0)

/*
 * Open transport tp's iface for rank of nranks with the parameters of p
 * (NULL: the defaults; rank, nranks and the session come from here, a
 * NULL hostid is "test-host"). The iface is freed again if open fails,
 * whose status is returned (OHC_ERR_NOT_FOUND: no such transport).
 */
ohc_status_t tp_iface_open(struct tp_rank *c, const char *tp, int rank,
			   int nranks, const struct ohc_transport_params *p);

/* tp_iface_open that must succeed, then publish our blob; 0 or 1. */
int tp_rank_open(struct tp_rank *c, const char *tp, int rank, int nranks,
		 const struct ohc_transport_params *p);

/* ep_init for every other rank (and ourselves too if with_self) from the
 * published blobs, each checked reachable first; 0 or 1. */
int tp_rank_eps(struct tp_rank *c, int with_self);

/* iface_connect of all our eps within timeout_ms; 0 or 1. */
int tp_rank_connect(struct tp_rank *c, int timeout_ms);

/* Open, publish, wait for everyone's blob, eps to every other rank and
 * connect them within connect_ms; 0 or 1. */
int tp_rank_up(struct tp_rank *c, const char *tp, int rank, int nranks,
	       const struct ohc_transport_params *p, int connect_ms);

/* Finish the eps and close the iface (if open); checks nothing. */
void tp_rank_close(struct tp_rank *c);

/*
 * tp_rank_close, then check that nothing leaked: fds, and under ASan
 * memory (forked ranks _exit(), which skips LeakSanitizer); 0 or 1.
 */
int tp_rank_down(struct tp_rank *c);

/*
 * Progress until none of the n requests is in progress, sleeping in
 * iface_wait(wait_ms) when nothing moved; -1 (and a line on stderr) if
 * some still are after timeout_ms.
 */
int tp_drive(struct tp_rank *c, struct ohc_req **reqs, int n, int wait_ms,
	     int timeout_ms);

/*
 * Test bytes: byte i of the payload that src sends dst as its message
 * idx, a hash of all four, so a byte from another offset, peer or message
 * shows. Filled and checked a word at a time.
 */
uint8_t tp_pat(size_t i, int src, int dst, int idx);
void tp_fill(uint8_t *b, size_t len, int src, int dst, int idx);
/* Index of the first wrong byte, or -1. */
long tp_verify(const uint8_t *b, size_t len, int src, int dst, int idx);

/* A send of len bytes of buf / a copying receive into buf, signature
 * (seq, len), in progress and ready to post. */
void tp_req_send(struct ohc_req *q, const void *buf, size_t len, uint64_t seq);
void tp_req_recv(struct ohc_req *q, void *buf, size_t len, uint64_t seq);

/*
 * Every pair at once: for each distance d, post the receive from rank - d
 * of len bytes into rb[from] (rreq[from]) and the send of sb[to] to
 * rank + d (sreq[to]), both with sequence number seq; every request also
 * goes into all (*n of them). 0, or 1 if a post failed.
 */
int tp_post_all_pairs(struct tp_rank *c, uint8_t *const *sb, uint8_t *const *rb,
		      size_t len, uint64_t seq, struct ohc_req *sreq,
		      struct ohc_req *rreq, struct ohc_req **all, int *n);

/* 1 if there is an RDMA device here (verbs can run). */
int tp_have_rdma(void);

/* CPU seconds used so far by this process (RUSAGE_SELF) or thread
 * (RUSAGE_THREAD): what shows a wait that spins. */
double tp_cpu_seconds(int who);

#endif
