/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gate of a bootstrap listener (the root's and every rank's): the
 * connections accepted that have not yet presented their first frame.
 *
 * A stranger cannot stall a job through it. The listener is always polled
 * (unless accept itself fails, e.g. out of fds); the gate holds at most
 * BS_GATE_MAX connections and drops the oldest for each new one beyond,
 * and each connection has BS_GATE_WAIT_MS to send one whole frame. A real
 * rank writes its frame as soon as it is connected, so it is read in the
 * poll round that accepts it, however many idle connections wait beside
 * it. What is dropped or refused is counted; the first few are logged one
 * by one, the rest in one summary line per BS_GATE_SUMMARY_MS and one
 * when the gate closes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/bootstrap/bs_internal.h"
#include "util/config.h"
#include "util/log.h"
#include "util/time.h"

/* Room is made by eviction; the wait only tidies up, after
 * HCCL_CONNECT_TIMEOUT or BS_GATE_WAIT_MIN_S if that is longer. A real
 * rank that the scheduler keeps off the CPU between its connect and its
 * first write must not be dropped: 2,048 ranks on 2 cores went 5 s
 * without a turn. */
#define BS_GATE_WAIT_MIN_S 30
#define BS_GATE_LOG_MAX 5 /* drops logged one by one per gate */
#define BS_GATE_SUMMARY_MS 10000
#define BS_GATE_ACCEPT_BURST 64 /* accepts per call, so reads interleave */

static const char *const drop_names[BS_GATE_NDROP] = {
	[BS_GATE_IDLE] = "idle",       [BS_GATE_EVICTED] = "evicted",
	[BS_GATE_CLOSED] = "closed",   [BS_GATE_MALFORMED] = "malformed",
	[BS_GATE_REFUSED] = "refused",
};

void bs_gate_init(struct bs_gate *g, const char *where, size_t frame_max)
{
	memset(g, 0, sizeof(*g));
	snprintf(g->where, sizeof(g->where), "%s", where);
	g->frame_max = frame_max;
	g->wait_s = ohc_env()->connect_timeout_s > BS_GATE_WAIT_MIN_S
			    ? (unsigned)ohc_env()->connect_timeout_s
			    : BS_GATE_WAIT_MIN_S;
}

static void summary(struct bs_gate *g, const char *when)
{
	char counts[256];
	size_t off = 0;

	for (int k = 0; k < BS_GATE_NDROP; k++)
		if (g->dropped[k])
			off += (size_t)snprintf(
				counts + off, sizeof(counts) - off,
				"%s%s %" PRIu64, off ? ", " : "", drop_names[k],
				g->dropped[k]);
	OHC_WARN(OHC_SS_BOOT,
		 "%s: %" PRIu64 " more connections dropped %s, not logged "
		 "one by one; all drops so far: %s",
		 g->where, g->quiet, when, counts);
	g->quiet = 0;
}

/* Count a drop; log it while few were, else fold it into a summary. */
static void note_drop(struct bs_gate *g, enum bs_gate_drop kind,
		      const struct bs_addr *from, const char *who,
		      const char *why)
{
	char addr[BS_ADDR_STRLEN];
	uint64_t now = ohc_time_ns();

	g->dropped[kind]++;
	if (g->logged < BS_GATE_LOG_MAX) {
		g->logged++;
		ohc_log(kind == BS_GATE_REFUSED ? OHC_LOG_ERROR : OHC_LOG_WARN,
			OHC_SS_BOOT, __FILE__, __LINE__,
			"%s: %s %s from %s: %s%s", g->where,
			kind == BS_GATE_REFUSED ? "refused" : "dropped",
			who ? who : "a connection",
			bs_addr_str(from, addr, sizeof(addr)), why,
			g->logged == BS_GATE_LOG_MAX
				? " (further ones are counted, not logged)"
				: "");
		g->summary_at = now + BS_GATE_SUMMARY_MS * 1000000ull;
		return;
	}
	g->quiet++;
	if (now >= g->summary_at) {
		summary(g, "in the last 10 s or so");
		g->summary_at = now + BS_GATE_SUMMARY_MS * 1000000ull;
	}
}

static void conn_drop(struct bs_gate *g, unsigned i, enum bs_gate_drop kind,
		      const char *who, const char *why)
{
	struct bs_gate_conn *c = &g->conns[i];

	note_drop(g, kind, &c->from, who, why);
	ohc_frame_rx_reset(&c->rx);
	close(c->fd);
	c->fd = -1;
	g->live--;
}

void bs_gate_fini(struct bs_gate *g)
{
	for (unsigned i = 0; i < g->n; i++) {
		if (g->conns[i].fd < 0)
			continue;
		ohc_frame_rx_reset(&g->conns[i].rx);
		close(g->conns[i].fd);
	}
	if (g->quiet)
		summary(g, "until the listener closed");
	free(g->conns);
	g->conns = NULL;
	g->n = g->cap = g->live = 0;
}

void bs_gate_tidy(struct bs_gate *g)
{
	uint64_t now = ohc_time_ns();
	unsigned j = 0;

	for (unsigned i = 0; i < g->n; i++) {
		struct bs_gate_conn *c = &g->conns[i];

		if (c->fd >= 0 && now - c->since > g->wait_s * 1000000000ull)
			conn_drop(g, i, BS_GATE_IDLE, NULL,
				  "no whole first frame within the connect "
				  "timeout");
		if (c->fd < 0)
			continue;
		if (i != j)
			g->conns[j] = *c;
		j++;
	}
	g->n = j;
}

int bs_gate_listening(const struct bs_gate *g)
{
	return ohc_time_ns() >= g->accept_pause;
}

/* Room for one more entry; when BS_GATE_MAX are live, the oldest goes. */
static int make_room(struct bs_gate *g)
{
	if (g->live >= BS_GATE_MAX) {
		unsigned oldest = g->n;

		for (unsigned i = 0; i < g->n; i++)
			if (g->conns[i].fd >= 0 &&
			    (oldest == g->n ||
			     g->conns[i].since < g->conns[oldest].since))
				oldest = i;
		conn_drop(g, oldest, BS_GATE_EVICTED, NULL,
			  "dropped for a newer connection (the gate is full)");
	}
	if (g->n == g->cap) {
		unsigned cap = g->cap ? 2 * g->cap : 16;
		struct bs_gate_conn *grown =
			realloc(g->conns, cap * sizeof(*grown));

		if (!grown)
			return 0;
		g->conns = grown;
		g->cap = cap;
	}
	return 1;
}

unsigned bs_gate_accept(struct bs_gate *g, int lfd)
{
	unsigned first = g->n;

	for (int k = 0; k < BS_GATE_ACCEPT_BURST; k++) {
		struct bs_gate_conn *c;
		struct bs_addr from;
		int fd, err = 0;
		socklen_t len = sizeof(from.u);
		ohc_status_t status;

		memset(&from, 0, sizeof(from));
		status = ohc_hs_accept_one(lfd, &fd, &from.u.sa, &len, &err);
		from.len = len;

		if (status == OHC_INPROGRESS)
			break;
		if (status < 0) {
			/* Typically out of fds: leave the backlog alone for a
			 * while instead of spinning on it. */
			if (!g->accept_warned++)
				OHC_WARN(OHC_SS_BOOT, "%s: accept: %s",
					 g->where, strerror(err));
			g->accept_pause = ohc_time_ns() + 100000000ull;
			break;
		}
		if (!make_room(g)) {
			close(fd);
			break;
		}
		c = &g->conns[g->n++];
		c->fd = fd;
		c->from = from;
		c->since = ohc_time_ns();
		ohc_frame_rx_init(&c->rx, &bs_proto, fd);
		g->live++;
	}
	return first;
}

ohc_status_t bs_gate_read(struct bs_gate *g, unsigned i,
			  struct ohc_frame_hdr *h_p, uint8_t **pl_p)
{
	struct bs_gate_conn *c = &g->conns[i];
	ohc_status_t status;
	int err = 0;

	if (c->fd < 0)
		return OHC_INPROGRESS;
	status = ohc_frame_rx_read(&c->rx, g->frame_max, &err);
	if (status == OHC_INPROGRESS)
		return status;
	if (status == OHC_ERR_INVALID) {
		conn_drop(g, i, BS_GATE_MALFORMED, NULL,
			  "not a bootstrap peer (bad frame)");
		return status;
	}
	if (status < 0) {
		conn_drop(g, i, BS_GATE_CLOSED, NULL,
			  err ? strerror(err)
			      : "closed before a whole first frame");
		return status;
	}
	*pl_p = ohc_frame_rx_take(&c->rx, h_p);
	return OHC_OK;
}

int bs_gate_take(struct bs_gate *g, unsigned i, struct bs_addr *from_p)
{
	struct bs_gate_conn *c = &g->conns[i];
	int fd = c->fd;

	if (from_p)
		*from_p = c->from;
	c->fd = -1;
	g->live--;
	return fd;
}

const struct bs_addr *bs_gate_from(const struct bs_gate *g, unsigned i)
{
	return &g->conns[i].from;
}

void bs_gate_refuse(struct bs_gate *g, unsigned i, ohc_status_t reply,
		    const char *who, const char *why)
{
	if (reply < 0) {
		uint8_t buf[4 + BS_TEXT_MAX];
		size_t len = strnlen(why, BS_TEXT_MAX);
		struct ohc_frame_hdr h = {.type = BS_T_REFUSE, .len = 4 + len};
		struct ohc_frame_tx tx;
		int err;

		/* Best effort: one non-blocking write of a small frame. The
		 * request was read whole, so the close is orderly. */
		ohc_be_put32(buf, (uint32_t)(int32_t)reply);
		memcpy(buf + 4, why, len);
		ohc_frame_tx_init(&tx, &bs_proto, &h, buf);
		(void)ohc_frame_tx_write(g->conns[i].fd, &tx, &err);
	}
	conn_drop(g, i, BS_GATE_REFUSED, who, why);
}
