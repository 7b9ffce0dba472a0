/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --ranktable FILE --rank N: every rank's doctor runs at the same time.
 * Each listens where the rank table says its rank lives (the server's
 * host_ip, port host_port or HCCL_IF_BASE_PORT + the rank's index on its
 * server; for rank 0 that is exactly the root port of a rank-table job)
 * and connects to every other rank: a hello (util/hs.h, dr_proto) whose
 * token is the rank table's hash, then, when both ends have an RDMA port,
 * one RC send (QP addresses and the verdict as frames too). A listener thread
 * answers the peers' connections meanwhile and the doctor stays until
 * every peer it reached has also reached it, or the timeout.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/bootstrap/bs_internal.h"
#include "comm/ranktable.h"
#include "doctor.h"
#include "util/config.h"
#include "util/hs.h"
#include "util/time.h"

#define HELLO_BYTES 8 /* nranks, flags */
#define HELLO_RDMA 1u

const struct ohc_frame_proto dr_proto = {
	.magic = 0x4452, /* "DR" */
	.version = 2,
	.type_max = DR_T_VERDICT,
};

uint64_t dr_now_ms(void)
{
	return ohc_time_ns() / 1000000u;
}

/* Our hello to rank `to` (OHC_HS_ANY: not known), body filled in. */
static struct ohc_hs_hello hello_to(const struct ohc_ranktable *rt, uint32_t me,
				    uint32_t to, unsigned flags,
				    uint8_t body[HELLO_BYTES])
{
	ohc_be_put32(body, rt->nranks);
	ohc_be_put32(body + 4, flags);
	return (struct ohc_hs_hello){.type = DR_T_HELLO,
				     .from = me,
				     .to = to,
				     .body = body,
				     .len = HELLO_BYTES};
}

struct ping {
	const struct ohc_ranktable *rt;
	uint32_t me;
	const struct dr_port *port;
	int lfd;
	unsigned timeout_ms;
	atomic_int stop;
	atomic_uint heard;    /* distinct peers that reached us */
	unsigned char *seen;  /* per rank, listener thread only */
	pthread_mutex_t lock; /* guards log lines of the listener */
	char rdma_note[256];  /* last responder-side RDMA failure */
};

static void copy_str(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src, len - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Where rank r's doctor listens: host and port. */
static void rank_endpoint(const struct ohc_ranktable *rt, uint32_t r, char *ip,
			  size_t len, uint16_t *port_p)
{
	const struct ohc_rt_rank *k = &rt->ranks[r];
	const struct ohc_rt_server *s = &rt->servers[k->server_index];
	struct bs_addr tmp;

	if (s->host_ip[0])
		copy_str(ip, len, s->host_ip);
	else if (k->device_ip[0])
		copy_str(ip, len, k->device_ip);
	else if (bs_addr_from_ip(s->server_id, 0, &tmp) == OHC_OK)
		copy_str(ip, len, s->server_id);
	else
		copy_str(ip, len, "127.0.0.1");
	*port_p =
		k->host_port > 0
			? (uint16_t)k->host_port
			: (uint16_t)(ohc_env()->if_base_port + k->local_index);
}

/*
 * Listener side of one connection: hello, then maybe one RC receive. A
 * hello of our protocol is answered even when its token (the rank
 * table's hash) differs, so that the peer can say so.
 */
static void serve(struct ping *pg, int fd)
{
	uint8_t body[HELLO_BYTES], mine[HELLO_BYTES];
	struct ohc_hs_hello m = hello_to(pg->rt, pg->me, pg->me, 0, body);
	unsigned flags = pg->port ? HELLO_RDMA : 0;
	char why[200] = "";
	ohc_status_t status;
	struct ohc_hs hs;
	uint32_t from;

	ohc_hs_init(&hs, &dr_proto, "a peer", pg->rt->content_hash,
		    ohc_deadline_after_ms(pg->timeout_ms));
	status = ohc_hs_hello_recv(&hs, fd, &m);
	if (status < 0 && !(status == OHC_ERR_INVALID && hs.err == EACCES))
		return;
	from = status == OHC_OK ? m.from : OHC_HS_ANY;
	m = hello_to(pg->rt, pg->me, from, flags, mine);
	if (ohc_hs_hello_send(&hs, fd, &m) < 0 || status < 0 ||
	    from >= pg->rt->nranks || ohc_be_get32(body) != pg->rt->nranks)
		return;
	if (!pg->seen[from]) {
		pg->seen[from] = 1;
		atomic_fetch_add(&pg->heard, 1);
	}
	if (pg->port && (ohc_be_get32(body + 4) & HELLO_RDMA) &&
	    dr_rdma_pingpong(&hs, fd, 0, pg->port, pg->timeout_ms, why,
			     sizeof(why))) {
		pthread_mutex_lock(&pg->lock);
		snprintf(pg->rdma_note, sizeof(pg->rdma_note),
			 "receiving from rank %u: %s", from, why);
		pthread_mutex_unlock(&pg->lock);
	}
}

static void *listener(void *arg)
{
	struct ping *pg = arg;

	while (!atomic_load(&pg->stop)) {
		struct pollfd p = {.fd = pg->lfd, .events = POLLIN};
		int fd, err;

		if (poll(&p, 1, 100) <= 0)
			continue;
		if (ohc_hs_accept_one(pg->lfd, &fd, NULL, NULL, &err) != OHC_OK)
			continue;
		serve(pg, fd);
		close(fd);
	}
	return NULL;
}

static void ping_peer(struct dr_report *rep, struct ping *pg, uint32_t r,
		      uint64_t deadline, unsigned *reached)
{
	char ip[64], where[BS_ADDR_STRLEN + 8], fix[300], why[200] = "";
	char name[BS_ADDR_STRLEN + 32];
	uint8_t body[HELLO_BYTES], mine[HELLO_BYTES];
	struct ohc_hs_hello m;
	struct ohc_hs hs;
	struct bs_addr a;
	uint16_t port;
	uint64_t t0 = dr_now_ms();
	unsigned flags = 0;
	int fd = -1;

	rank_endpoint(pg->rt, r, ip, sizeof(ip), &port);
	snprintf(where, sizeof(where), "%s%s%s:%u", strchr(ip, ':') ? "[" : "",
		 ip, strchr(ip, ':') ? "]" : "", port);
	if (bs_addr_from_ip(ip, port, &a) != OHC_OK) {
		dr_problem(rep, "fix host_ip / device_ip in the rank table",
			   "rank %u: '%s' is not an IP address", r, ip);
		return;
	}
	snprintf(fix, sizeof(fix),
		 "run `hccl_doctor --ranktable <file> --rank %u` on %s at the "
		 "same time; check host_port / HCCL_IF_BASE_PORT and the "
		 "firewall (TCP %u must be open)",
		 r, ip, port);
	snprintf(name, sizeof(name), "rank %u at %s", r, where);
	/* deadline: CLOCK_MONOTONIC ms, as ohc_time_ns() in ns */
	ohc_hs_init(&hs, &dr_proto, name, pg->rt->content_hash,
		    deadline * 1000000u);
	if (ohc_hs_connect(&hs, &a.u.sa, a.len, SOCK_STREAM, &fd) < 0) {
		int e = hs.err;

		dr_problem(rep, fix, "rank %u at %s is unreachable: %s%s", r,
			   where, strerror(e),
			   e == ECONNREFUSED ? " (nothing listens there)"
			   : e == ETIMEDOUT  ? " (no answer: firewall or "
					       "routing)"
					     : "");
		return;
	}
	m = hello_to(pg->rt, pg->me, r, pg->port ? HELLO_RDMA : 0, mine);
	if (ohc_hs_hello_send(&hs, fd, &m) == OHC_OK) {
		m = hello_to(pg->rt, pg->me, pg->me, 0, body);
		if (ohc_hs_hello_recv(&hs, fd, &m) == OHC_OK)
			hs.why[0] = '\0';
	}
	if (hs.why[0] && hs.err == EACCES) {
		dr_problem(rep,
			   "give every rank the same rank table file and "
			   "its own --rank",
			   "%s answers with a different rank table", name);
		goto out;
	}
	if (hs.why[0] && !hs.err) {
		dr_problem(rep, fix,
			   "rank %u at %s: another program answers on that "
			   "port (%s)",
			   r, where, hs.why);
		goto out;
	}
	if (hs.why[0]) {
		dr_problem(rep, fix,
			   "rank %u at %s: connected but no hello (%s): is "
			   "something else listening on that port?",
			   r, where, hs.why);
		goto out;
	}
	flags = ohc_be_get32(body + 4);
	if (m.from != r || ohc_be_get32(body) != pg->rt->nranks) {
		dr_problem(rep,
			   "give every rank the same rank table file and "
			   "its own --rank",
			   "rank %u at %s answers as rank %u of %u with the "
			   "same rank table",
			   r, where, m.from, ohc_be_get32(body));
		goto out;
	}
	(*reached)++;
	if (!pg->port || !(flags & HELLO_RDMA)) {
		dr_ok("rank %u at %s: TCP ok (%llu ms)%s", r, where,
		      (unsigned long long)(dr_now_ms() - t0),
		      pg->port ? "; the peer has no RDMA port, no RC test"
			       : "");
		goto out;
	}
	if (dr_rdma_pingpong(&hs, fd, 1, pg->port, pg->timeout_ms, why,
			     sizeof(why))) {
		dr_problem(rep,
			   "check that both hosts' RoCE GIDs route to each "
			   "other (same subnet or routed, MTU), and `rdma "
			   "link show`",
			   "rank %u at %s: TCP ok, but the RDMA RC message "
			   "failed: %s",
			   r, where, why);
		goto out;
	}
	dr_ok("rank %u at %s: TCP ok, RDMA RC send ok over %s port %u (%llu "
	      "ms)",
	      r, where, pg->port->dev, pg->port->port,
	      (unsigned long long)(dr_now_ms() - t0));
out:
	close(fd);
}

int dr_ranktable_ping(struct dr_report *rep, const char *path, uint32_t rank,
		      unsigned timeout_s, const struct dr_port *ports,
		      unsigned nports)
{
	const struct dr_port *port = nports ? &ports[0] : NULL;
	struct ohc_ranktable *rt = NULL;
	struct ping pg = {0};
	struct bs_addr a;
	pthread_t th;
	char ip[64], where[BS_ADDR_STRLEN];
	uint16_t lport;
	uint64_t deadline;
	unsigned reached = 0;
	int one = 1, rc = -1;

	dr_section("rank table peers");
	if (ohc_ranktable_load(path, &rt) != OHC_OK) {
		dr_problem(rep,
			   "fix the rank table (the line above names the "
			   "field)",
			   "%s", ohc_ranktable_last_error());
		return -1;
	}
	if (rank >= rt->nranks) {
		dr_problem(rep, "pass --rank between 0 and nranks-1",
			   "--rank %u is not in %s (%u ranks)", rank, path,
			   rt->nranks);
		goto free_rt;
	}
	if (rt->ranks[rank].device_ip[0] && nports) {
		unsigned i;

		for (i = 0; i < nports; i++)
			if (!strcmp(ports[i].ipv4, rt->ranks[rank].device_ip))
				break;
		if (i < nports)
			port = &ports[i];
		else
			dr_warn(rep,
				"give the RDMA netdev of this rank the "
				"address of its device_ip, or fix device_ip",
				"rank %u's device_ip %s is on no RDMA port: "
				"testing with %s port %u",
				rank, rt->ranks[rank].device_ip, port->dev,
				port->port);
	}
	pg.rt = rt;
	pg.me = rank;
	pg.port = port;
	pg.timeout_ms = timeout_s * 1000;
	pg.seen = calloc(rt->nranks, 1);
	if (!pg.seen) {
		dr_problem(rep, "retry with more memory", "out of memory");
		goto free_rt;
	}
	pthread_mutex_init(&pg.lock, NULL);
	rank_endpoint(rt, rank, ip, sizeof(ip), &lport);
	dr_info("%s: %u rank(s) on %u server(s); this is rank %u at %s port "
		"%u; RDMA: %s",
		path, rt->nranks, rt->nservers, rank, ip, lport,
		port ? port->dev : "none (TCP only)");
	if (bs_addr_from_ip(ip, lport, &a) != OHC_OK) {
		dr_problem(rep, "fix host_ip / device_ip in the rank table",
			   "rank %u: '%s' is not an IP address", rank, ip);
		goto free_seen;
	}
	if (!bs_addr_is_local(&a)) {
		dr_warn(rep,
			"run this on the host of rank's server, or fix "
			"host_ip",
			"%s is not an address of this host: listening on "
			"every address instead",
			ip);
		bs_addr_make_any(&a);
	}
	pg.lfd = socket(bs_addr_family(&a), SOCK_STREAM, 0);
	if (pg.lfd < 0 ||
	    setsockopt(pg.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(pg.lfd, &a.u.sa, a.len) || listen(pg.lfd, 64)) {
		dr_problem(rep,
			   "free the port (`ss -ltnp`) or choose another "
			   "host_port / HCCL_IF_BASE_PORT",
			   "cannot listen on %s: %s",
			   bs_addr_str(&a, where, sizeof(where)),
			   strerror(errno));
		goto close_lfd;
	}
	if (pthread_create(&th, NULL, listener, &pg)) {
		dr_problem(rep, "retry", "cannot start the listener thread");
		goto close_lfd;
	}
	deadline = dr_now_ms() + pg.timeout_ms;
	for (uint32_t r = 0; r < rt->nranks; r++)
		if (r != rank)
			ping_peer(rep, &pg, r, deadline, &reached);
	/* stay until the peers we reached have reached us too */
	while (atomic_load(&pg.heard) < reached && dr_now_ms() < deadline)
		usleep(50 * 1000);
	atomic_store(&pg.stop, 1);
	pthread_join(th, NULL);
	if (pg.rdma_note[0])
		dr_problem(rep,
			   "check both hosts' RoCE GIDs, routes and MTU; "
			   "`rdma link show`",
			   "RDMA RC %s", pg.rdma_note);
	if (rt->nranks == 1)
		dr_info("a one-rank table has no peers to reach");
	rc = 0;
close_lfd:
	if (pg.lfd >= 0)
		close(pg.lfd);
free_seen:
	pthread_mutex_destroy(&pg.lock);
	free(pg.seen);
free_rt:
	ohc_ranktable_free(rt);
	return rc;
}
