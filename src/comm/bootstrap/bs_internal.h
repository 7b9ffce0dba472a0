/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_COMM_BOOTSTRAP_BS_INTERNAL_H
#define OHC_COMM_BOOTSTRAP_BS_INTERNAL_H

/*
 * Private to src/comm/bootstrap: the endpoint ops table under the common
 * collectives, the wire format, the socket helpers and the root listener.
 */
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>

#include "comm/bootstrap/bootstrap.h"
#include "util/frame.h"
#include "util/hs.h"
#include "util/list.h"
#include "util/time.h"

#define BS_NO_RANK UINT32_MAX

struct bs_addr;

/* ---------------------------------------------------------------------- */
/* Endpoints: what an implementation provides (bootstrap.c builds the      */
/* collectives on top).                                                    */

/*
 * One exchange step: optionally send one message to send_to and receive
 * one from recv_from (ranks of the endpoint), progressing both together so
 * that rings of large messages cannot deadlock. Messages are matched by
 * (peer, ctx, type, tag) in arrival order.
 */
/* Fault seam for tests (bs_sock_join.c): a joining rank waits this long
 * between its connect to the root and its JOIN, as a rank the scheduler
 * keeps off the CPU does. */
extern unsigned ohc_bs_test_join_delay_ms;

/* Allgathers of more bytes in all go round the ring, not Bruck's
 * log-n steps (bootstrap.c; a test seam). */
extern size_t ohc_bs_bruck_max_bytes;

struct bs_xfer {
	uint8_t type; /* BS_T_COLL or BS_T_DATA */
	uint64_t send_tag, recv_tag;
	uint32_t send_to; /* BS_NO_RANK: nothing to send */
	const void *send_buf;
	size_t send_len;
	uint32_t recv_from; /* BS_NO_RANK: nothing to receive */
	void *recv_buf;
	size_t recv_len;
	const char *what; /* operation name for log lines */
	uint32_t culprit; /* out: the peer an error is about, or BS_NO_RANK */
};

struct bs_ep;

struct bs_ep_ops {
	const char *name;
	/* Blocking until done, deadline (ohc_time_ns) or abort. Logs its
	 * own errors. */
	ohc_status_t (*xfer)(struct bs_ep *ep, uint64_t ctx, struct bs_xfer *x,
			     uint64_t deadline);
	/* A collective failed: poison the endpoint (sticky `why`) and tell
	 * the peers. Idempotent. */
	void (*fail)(struct bs_ep *ep, ohc_status_t why, uint32_t culprit);
	/* Thread-safe: blocked and later calls return OHC_ERR_CANCELED. */
	void (*abort)(struct bs_ep *ep);
	const char *(*hostid)(struct bs_ep *ep, uint32_t rank);
	/* The last handle is gone: close and free everything. */
	void (*release)(struct bs_ep *ep);
};

struct bs_ep {
	const struct bs_ep_ops *ops;
	uint32_t rank, nranks;
	int refs; /* atomic: handles (world and sub-groups) using it */
};

struct ohc_bootstrap {
	struct bs_ep *ep;
	uint32_t rank, nranks; /* in this group */
	uint32_t *map;	       /* group rank -> endpoint rank; NULL = same */
	uint64_t ctx;	       /* 0 for the world, hashed id for sub-groups */
	uint64_t seq;	       /* collectives issued so far */
	uint64_t timeout_ms;   /* 0 = no limit */
};

/* Wrap ep (taking over its reference) in a world handle. */
ohc_status_t bs_handle_new(struct bs_ep *ep, uint64_t timeout_ms,
			   struct ohc_bootstrap **bs_p);

/* Tokens (bs_auth.c): what JOIN and HELLO present and WELCOME proves,
 * derived from the job's raw token and the optional shared secret. */
struct bs_auth {
	uint64_t raw; /* root info token or rank-table hash: never shown */
	uint64_t key[2];
	int keyed; /* OPENHCCL_BOOTSTRAP_SECRET(_FILE) in use */
};

/* The root's address and port in a root info that passed
 * ohc_root_info_check (bootstrap.c). */
ohc_status_t bs_root_info_addr(const void *root_info, struct bs_addr *a_p);

/* Load the secret (if configured; logs what is wrong with it). */
ohc_status_t bs_auth_init(uint64_t raw, struct bs_auth *auth_p);
uint64_t bs_auth_join(const struct bs_auth *auth);
uint64_t bs_auth_welcome(const struct bs_auth *auth, uint32_t rank);
/* What names may show of a raw token (it does not reveal the token). */
uint64_t bs_auth_public_id(uint64_t raw);
/* Random non-zero 64-bit value (getrandom): a root info's raw token. */
ohc_status_t bs_random64(uint64_t *v_p);

/*
 * Socket endpoint: register with the root and build the ring. With one
 * root address the rank waits there for the root (retrying while it is not
 * up yet); with several (a rank-table root that found its first ports
 * taken) it tries them in turn until one answers with this job's WELCOME.
 */
ohc_status_t bs_sock_join(const struct bs_addr *roots, unsigned nroots,
			  const struct bs_auth *auth, uint32_t nranks,
			  uint32_t rank, uint64_t timeout_ms,
			  struct bs_ep **ep_p);

/*
 * Tests and fuzzing: a socket endpoint of rank `rank` of nranks with no
 * root and no listener, whose connections already exist: out_fds[r]
 * carries our frames to rank r (its HELLO taken as written), in_fds[r]
 * rank r's frames to us (its HELLO taken as read); -1 where there is
 * none. Takes over every fd (made non-blocking; closed on failure, and
 * those given for rank itself at once). Host ids are empty.
 */
ohc_status_t bs_sock_adopt(uint32_t nranks, uint32_t rank, uint64_t token,
			   const int *out_fds, const int *in_fds,
			   struct bs_ep **ep_p);

/* Milliseconds elapsed since t0 (an ohc_time_ns value). */
static inline uint64_t bs_ms_since(uint64_t t0)
{
	return (ohc_time_ns() - t0) / 1000000u;
}

/* Extra time ranks wait for the root's verdict beyond their timeout. */
static inline uint64_t bs_grace_ms(uint64_t timeout_ms)
{
	uint64_t g = 250 + timeout_ms / 10;

	return g > 20000 ? 20000 : g;
}

/* ---------------------------------------------------------------------- */
/* Addresses (bs_addr.c).                                                 */

struct bs_addr {
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
		struct sockaddr_storage ss;
	} u;
	socklen_t len;
};

#define BS_ADDR_STRLEN 80 /* "[ipv6%ifname]:port" */

/* Parse "a.b.c.d", "x::y" or "fe80::1%eth0"; family from the string. */
ohc_status_t bs_addr_from_ip(const char *ip, uint16_t port,
			     struct bs_addr *a_p);
/* "ip:port" / "[ip]:port"; always NUL-terminated, returns buf. */
const char *bs_addr_str(const struct bs_addr *a, char *buf, size_t len);
/* The address without port or scope. */
void bs_addr_ip_str(const struct bs_addr *a, char *buf, size_t len);
int bs_addr_family(const struct bs_addr *a);
uint16_t bs_addr_port(const struct bs_addr *a);
void bs_addr_set_port(struct bs_addr *a, uint16_t port);
int bs_addr_is_any(const struct bs_addr *a);
/* Same IP (IPv4-mapped IPv6 equals its IPv4), ports ignored. */
int bs_addr_same_ip(const struct bs_addr *a, const struct bs_addr *b);
/* Whether a is the wildcard or an address of a local interface. */
int bs_addr_is_local(const struct bs_addr *a);
/* The wildcard / loopback address of a's family, port kept. */
void bs_addr_make_any(struct bs_addr *a);
void bs_addr_make_loopback(struct bs_addr *a);

/* Wire form: family code (4/6), port, scope id, 16 address bytes. */
#define BS_WIRE_ADDR_BYTES 24
void bs_addr_encode(const struct bs_addr *a, uint8_t *out);
ohc_status_t bs_addr_decode(const uint8_t *in, struct bs_addr *a_p);

/* ---------------------------------------------------------------------- */
/* Interface selection (bs_iface.c).                                      */

/* HCCL_SOCKET_IFNAME: "eth,enp" / "^eth" / "=eth0" / "^=eth0". */
#define BS_IFRULE_MAX 32
struct bs_ifrule {
	int exclude;
	int exact;
	unsigned n;
	char names[BS_IFRULE_MAX][16];
};
ohc_status_t bs_ifrule_parse(const char *spec, struct bs_ifrule *rule_p);
int bs_ifrule_match(const struct bs_ifrule *rule, const char *ifname);

/* First interface address of `family` allowed by rule (NULL: automatic
 * order). ifname_p (may be NULL) gets the interface name. */
ohc_status_t bs_addr_select(int family, const struct bs_ifrule *rule,
			    struct bs_addr *a_p, char *ifname_p, size_t len);
/* The local bootstrap address per HCCL_IF_IP > HCCL_SOCKET_IFNAME > auto;
 * port 0. Logs what is wrong. */
ohc_status_t bs_local_addr(struct bs_addr *a_p);
/* Whether HCCL_IF_IP or HCCL_SOCKET_IFNAME chooses the address. */
int bs_local_addr_forced(void);

/* ---------------------------------------------------------------------- */
/* Ports (bs_ports.c).                                                    */

/* Port lists: "60000,60050-60100" or "auto". */
#define BS_PORT_RANGES_MAX 64
struct bs_ports {
	unsigned n;
	uint16_t lo[BS_PORT_RANGES_MAX], hi[BS_PORT_RANGES_MAX];
	int ephemeral;	/* try port 0 after the ranges */
	char desc[320]; /* for log lines */
};
ohc_status_t bs_ports_parse(const char *spec, struct bs_ports *p_p);
/* Root listeners: HCCL_HOST_SOCKET_PORT_RANGE, else HCCL_IF_BASE_PORT +
 * 0..31 then ephemeral. Rank listeners: the range if set, else ephemeral. */
ohc_status_t bs_ports_for_root(struct bs_ports *p_p);
ohc_status_t bs_ports_for_rank(struct bs_ports *p_p);
/* A single exact port. */
void bs_ports_exact(uint16_t port, struct bs_ports *p_p);

/* ---------------------------------------------------------------------- */
/* Sockets (bs_conn.c): listeners; connect, accept, poll and frames are   */
/* the handshake service's (util/hs.h, util/frame.h).                     */

/* Bind addr (port filled in) trying `ports` in order; listen
 * (non-blocking, close-on-exec). Logs. */
ohc_status_t bs_listen(struct bs_addr *addr, const struct bs_ports *ports,
		       int *fd_p);

/* ---------------------------------------------------------------------- */
/* Frames (util/frame.h, bs_proto): a 32-byte header (magic, version,     */
/* type, ctx, tag, length, in network byte order) and a payload. Lengths  */
/* are checked against what the receiver expects before any allocation.  */

#define BS_WIRE_MAGIC 0x4f42u /* "OB" */
#define BS_WIRE_VERSION 2

enum bs_type {
	BS_T_JOIN = 1,	     /* rank -> root: who I am */
	BS_T_TABLE = 2,	     /* root -> rank: everyone's address and host id */
	BS_T_REFUSE = 3,     /* root -> rank: status + reason text */
	BS_T_EXPIRED = 4,    /* root -> rank: who never arrived (text) */
	BS_T_HELLO = 5,	     /* first frame of a rank-to-rank connection */
	BS_T_COLL = 6,	     /* collective step */
	BS_T_DATA = 7,	     /* tagged send/recv */
	BS_T_ABORT = 8,	     /* the sender poisoned its bootstrap */
	BS_T_WELCOME = 9,    /* root -> rank: JOIN accepted, with the proof */
	BS_T_TABLE_VIA = 10, /* root -> rank: the table comes from the rank's
				parent in the table tree (no payload) */
	BS_T_MAX = 10,
};

/*
 * The table tree: the root sends the TABLE itself to the first
 * ohc_bs_table_direct ranks (64; a test seam) and BS_T_TABLE_VIA to the
 * rest, each of which gets the table from its parent, a rank that has
 * it, as a COLL message of tag BS_TABLE_TAG on context 0. Rank p's
 * children are direct + p * BS_TABLE_FANOUT + k (k < BS_TABLE_FANOUT), so
 * the root sends at most `direct` tables and every rank at most
 * BS_TABLE_FANOUT: at 4,096 ranks 64 + 4 copies instead of 4,096 from the
 * root, in 4 levels.
 */
#define BS_TABLE_FANOUT 4
#define BS_TABLE_TAG ((uint64_t)0xff << 24) /* no collective's tag */
extern uint32_t ohc_bs_table_direct;
/* The rank r gets the table from, or BS_NO_RANK: from the root. */
uint32_t bs_table_parent(uint32_t n, uint32_t r);
/* Child k of rank p, or BS_NO_RANK. */
uint32_t bs_table_child(uint32_t n, uint32_t p, unsigned k);

/* The bootstrap's frames: "OB", version 2, types 1..BS_T_MAX. */
extern const struct ohc_frame_proto bs_proto;

/* Entry of the rank table: listen address + host id. */
#define BS_ENTRY_BYTES (BS_WIRE_ADDR_BYTES + OHC_HOSTID_MAX)
/* JOIN: token, nranks, rank, timeout_ms, entry. */
#define BS_JOIN_BYTES (8 + 4 + 4 + 8 + BS_ENTRY_BYTES)
/* HELLO: token, from, to, nranks, 4 reserved. */
#define BS_HELLO_BYTES 24
/* WELCOME: bs_auth_welcome() for the rank. */
#define BS_WELCOME_BYTES 8
/* ABORT: reporter, culprit, status. */
#define BS_ABORT_BYTES 12
/* REFUSE: status + text; EXPIRED: text. */
#define BS_TEXT_MAX 512

/* Copy wire text into buf as a printable, NUL-terminated string. */
void bs_text_clean(const uint8_t *text, size_t len, char *buf, size_t size);

/* ---------------------------------------------------------------------- */
/* Checks of what a peer sends (bs_msg.c): pure, no I/O and no logging,   */
/* the very functions the root, the gate and the ranks call, so that      */
/* test/fuzz drives the real checks.                                      */

/* An entry (a JOIN's, or one of a TABLE's): the listen address of a known
 * family with a non-zero port, and a non-empty NUL-terminated host id
 * (*hostid_p points into e). Either output may be NULL. */
ohc_status_t bs_entry_decode(const uint8_t *e, struct bs_addr *a_p,
			     const char **hostid_p);

/* A JOIN's fields; entry points into the payload (BS_ENTRY_BYTES). */
struct bs_join {
	uint64_t token;
	uint32_t nranks, rank;
	uint64_t timeout_ms;
	const uint8_t *entry;
};

/* OHC_ERR_INVALID: not a JOIN (type, length). */
ohc_status_t bs_join_decode(const struct ohc_frame_hdr *h, const uint8_t *pl,
			    struct bs_join *j_p);
/* A JOIN with this job's token, at a root that knows nranks (0: not yet):
 * nranks in range and as known, rank below it, a good entry. Else
 * OHC_ERR_INVALID with the reason in why[len]. Duplicates are the root's
 * to find. */
ohc_status_t bs_join_check(const struct bs_join *j, uint32_t nranks, char *why,
			   size_t len);

/* A HELLO to rank me of n presenting token: NULL when it fits, else why.
 * *from_p: the rank it claims (BS_NO_RANK when it is not a HELLO). A
 * second connection from the same rank is the caller's to find. */
const char *bs_hello_check(const struct ohc_frame_hdr *h, const uint8_t *pl,
			   uint64_t token, uint32_t me, uint32_t n,
			   uint32_t *from_p);

/*
 * The TABLE (bs_msg.c has the layout): every rank's listen address and
 * host id, each distinct host id once. encode: from n JOIN entries, the
 * first at entry0, stride bytes apart; *pl_p is malloc'd, *len_p at most
 * bs_table_max_bytes(n). check: the TABLE for rank me of n, whose
 * listener is on my_port: count, length, every host id and address, the
 * host indices, our own port. decode: for a payload that passed check,
 * fn(arg, r, address, NUL-terminated host id) for every rank in order.
 */
size_t bs_table_max_bytes(uint32_t n);
ohc_status_t bs_table_encode(const uint8_t *entry0, size_t stride, uint32_t n,
			     uint8_t **pl_p, size_t *len_p);
ohc_status_t bs_table_check(const struct ohc_frame_hdr *h, const uint8_t *pl,
			    uint32_t n, uint32_t me, uint16_t my_port);
ohc_status_t bs_table_decode(const uint8_t *pl, uint64_t len,
			     void (*fn)(void *arg, uint32_t r,
					const struct bs_addr *a,
					const char *hostid),
			     void *arg);

/* A REFUSE: the root's status word and its text, made printable into
 * text[size]. OHC_ERR_INVALID: not a REFUSE, or too short for a status. */
ohc_status_t bs_refuse_parse(const struct ohc_frame_hdr *h, const uint8_t *pl,
			     int32_t *status_p, char *text, size_t size);
/* What a refused rank returns for the root's status word. */
ohc_status_t bs_refuse_status(int32_t raw);
/* A WELCOME carrying proof. */
int bs_welcome_ok(const struct ohc_frame_hdr *h, const uint8_t *pl,
		  uint64_t proof);
/* An ABORT's payload (len bytes) from a peer of an n-rank endpoint: the
 * rank it blames (BS_NO_RANK when none of the n) and its status (always
 * negative: OHC_ERR_REMOTE when it gives none). */
void bs_abort_parse(const uint8_t *pl, size_t len, uint32_t n,
		    uint32_t *culprit_p, int32_t *status_p);

/* ---------------------------------------------------------------------- */
/* The gate of a listener (bs_gate.c): accepted connections that have not  */
/* presented their first frame yet. Never full for a newcomer (the oldest  */
/* goes), bounded wait per connection, drops counted and logged sparingly. */

#define BS_GATE_MAX 256 /* connections held at once */

enum bs_gate_drop {
	BS_GATE_IDLE,	   /* no whole first frame in time */
	BS_GATE_EVICTED,   /* the oldest, for a newer connection */
	BS_GATE_CLOSED,	   /* closed or reset before a whole frame */
	BS_GATE_MALFORMED, /* not a frame of ours */
	BS_GATE_REFUSED,   /* a frame its owner refused */
	BS_GATE_NDROP,
};

struct bs_gate_conn {
	int fd; /* -1: dropped or taken; removed by bs_gate_tidy */
	struct ohc_frame_rx rx;
	struct bs_addr from;
	uint64_t since;
};

struct bs_gate {
	char where[BS_ADDR_STRLEN + 32]; /* owner, for log lines */
	size_t frame_max;
	unsigned wait_s; /* before an idle connection is dropped */
	struct bs_gate_conn *conns;
	unsigned n, cap; /* entries (some may be -1 until tidied) */
	unsigned live;	 /* entries with an fd */
	uint64_t accept_pause;
	int accept_warned;
	uint64_t dropped[BS_GATE_NDROP];
	unsigned logged; /* drops logged one by one */
	uint64_t quiet;	 /* drops since the last summary line */
	uint64_t summary_at;
};

void bs_gate_init(struct bs_gate *g, const char *where, size_t frame_max);
/* Close what is held; a last summary line if drops went unlogged. */
void bs_gate_fini(struct bs_gate *g);
/* Drop connections past their wait and compact: call before building a
 * pollset (entry indices are stable between two calls). */
void bs_gate_tidy(struct bs_gate *g);
/* Whether the listening socket should be polled now (not after accept
 * failed, e.g. out of fds, for 100 ms). */
int bs_gate_listening(const struct bs_gate *g);
/* Accept what is pending on lfd (a burst); returns the index of the first
 * new entry (new entries are [first, g->n)). */
unsigned bs_gate_accept(struct bs_gate *g, int lfd);
/* Read entry i. OHC_OK: its first frame (payload to free in *pl_p); the
 * caller then takes or refuses the entry. OHC_INPROGRESS: not yet (or the
 * entry is gone). < 0: the connection was dropped and counted. */
ohc_status_t bs_gate_read(struct bs_gate *g, unsigned i,
			  struct ohc_frame_hdr *h_p, uint8_t **pl_p);
/* Hand entry i's fd to the caller (from_p may be NULL). */
int bs_gate_take(struct bs_gate *g, unsigned i, struct bs_addr *from_p);
const struct bs_addr *bs_gate_from(const struct bs_gate *g, unsigned i);
/* Refuse entry i: count, log (sparingly) "refused <who> from <addr>:
 * <why>"; with reply < 0 first send a REFUSE frame (reply, why). */
void bs_gate_refuse(struct bs_gate *g, unsigned i, ohc_status_t reply,
		    const char *who, const char *why);

/* ---------------------------------------------------------------------- */
/* Root listener (bs_root.c).                                             */

/*
 * Bind `bind_addr` on one of `ports`, start the listener thread and
 * register it (the registry owns it; it is joined by ohc_root_listeners_reap
 * after it finished, by bs_root_cancel, or at process exit). nranks 0:
 * learn it from the first rank. idle_ms: how long to wait for a first rank.
 * bound_p gets the bound address, id_p an id for bs_root_cancel.
 */
ohc_status_t bs_root_start(const struct bs_addr *bind_addr,
			   const struct bs_ports *ports,
			   const struct bs_auth *auth, uint32_t nranks,
			   uint64_t idle_ms, struct bs_addr *bound_p,
			   uint64_t *id_p);
/* Stop and join the listener `id` if it still runs. */
void bs_root_cancel(uint64_t id);

#endif
