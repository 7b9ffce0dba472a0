/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TRANSPORT_VERBS_VERBS_H
#define OHC_TRANSPORT_VERBS_VERBS_H

/*
 * The verbs transport: RDMA RC queue pairs between ranks (other hosts, or
 * every peer with HCCL_INTRA_ROCE_ENABLE=1).
 *
 * Per endpoint and direction the receiver owns a ring of `slots` fixed-size
 * slots registered for remote write; the sender owns a staging copy of the
 * same geometry. A message travels as fragments, one per slot: a 64-byte
 * header (signature, lengths, piggybacked credits) and the payload, written
 * with one RDMA WRITE_WITH_IMM whose immediate names the slot (inline when
 * small, else from the staging slot, or with OPENHCCL_RDMA_GATHER_KB the
 * payload straight from the registered send buffer: see struct vx_gx).
 * The sender may use a slot only when
 * the receiver has freed it: the receiver returns its count of freed slots
 * in every header it sends and, when it is not sending, in a zero-length
 * SEND_WITH_IMM once a quarter of the ring is free again or before it
 * sleeps. So nothing overruns, and every receive WR the peer consumes was
 * pre-posted.
 *
 * Messages of OPENHCCL_RDMA_RNDV_KB and more go by rendezvous instead,
 * straight between the user buffers: see vx_rdv.h.
 *
 * Connection setup exchanges QP numbers, ring addresses and rkeys over a
 * TCP socket per pair (the listener's address is in the iface blob); the
 * socket stays open as a liveness probe: EOF means the peer process is
 * gone. It also carries one byte when a rank's communicator fails
 * (iface_abort): 'D' for a mismatched operation (OHC_ERR_DESYNC), 'X' for
 * anything else, so a peer blocked on it fails at its next ep_check with
 * that reason instead of waiting for its timeout.
 */
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/tp.h"
#include "transport/verbs/vx_proto.h"
#include "transport/verbs/vx_rdv.h"
#include "transport/verbs/vx_wrap.h"
#include "util/compiler.h"
#include "util/frame.h"
#include "util/hs.h"
#include "util/list.h"

#define OHC_VX_MAX_QPS 32
#define OHC_VX_HDR 64u /* bytes of a fragment header */
/* software RDMA devices' vendor ids (kernel rxe_param.h, siw.h) */
#define OHC_VX_VENDOR_RXE 0xffffffu /* Soft-RoCE */
#define OHC_VX_VENDOR_SIW 0x626d74u /* siw */

/* The address blob (the TCP listener for setup, the GID, the geometry). */
struct vx_blob {
	uint32_t magic;
	uint16_t version;
	uint16_t family; /* of the listener: AF_INET or AF_INET6 */
	uint32_t rank;
	uint16_t tcp_port;
	uint16_t pad;
	uint64_t session;
	uint8_t addr[16]; /* listener address */
	uint8_t gid[16];
	uint32_t nqps, slots, slot_bytes;
	uint32_t rndv_bytes; /* rendezvous threshold (0: off) */
};

_Static_assert(sizeof(struct vx_blob) <= OHC_ADDR_MAX, "blob fits");

struct ohc_vx_qp {
	struct ibv_qp *qp;
	uint32_t sq_inflight; /* send WRs posted, completion not yet seen */
	uint32_t unsig;	      /* unsignaled WRs since the last signaled one */
	uint32_t rq_posted;   /* receive WRs posted */
	/* send WRs whose completion was seen (signaled CQEs count the
	 * unsignaled WRs before them): the n-th WR posted on the QP has
	 * completed when sq_done >= n, since sq_done + sq_inflight is the
	 * number posted */
	uint64_t sq_done;
	/* chain being built by one push (linked through next) */
	struct ibv_send_wr *head, *tail;
	uint32_t nchain;
	int chain_gx; /* the chain carries gathered payload: signal its end */
};

/*
 * A send whose slot fragments took their payload straight from the send
 * buffer (OPENHCCL_RDMA_GATHER_KB): a WRITE_WITH_IMM with two SGEs, the
 * 64-byte header in the staging slot and the payload in the buffer,
 * registered through the cache (vx_mr.c; exported memory uses its
 * mem_reg registration). The send completes only when the last WR of
 * each QP that carried its payload completed (a chain carrying gathered
 * payload ends in a signaled WR), so the buffer is read before the
 * caller may touch it again; its registration is released then. Failed
 * with the ep (cancel, error CQE, dead peer), releasing the
 * registrations. A send whose buffer cannot be registered, or that
 * finds every record taken, copies through the staging slot as before.
 */
struct vx_gx {
	struct ohc_req *req;
	struct vx_mr *mr;
	uint64_t *mark;	   /* per QP: its last WR (sq_done ordinal), 0: none */
	uint64_t frag_end; /* tx_slots after its last fragment */
};

/* Where a sent fragment's payload is when it is not in its staging slot
 * (gathered from the send buffer): replay sends it again from there. */
struct vx_tx_src {
	const char *pay; /* NULL: in the staging slot */
	uint32_t lkey;
	uint64_t rec; /* its gathering record (gx number) */
};

/*
 * Replay after a transient link failure (vx_replay.c): the QPs are
 * drained, reset and connected again, and the fragments the peer did not
 * receive are sent again from where they still are (staging slots, the
 * send buffers of gathering sends not yet complete). A handshake on the
 * setup socket: HELLO (our new PSN, what we received, what we freed)
 * once our QPs are back in INIT with receives posted, READY once they
 * are in RTR. Both sides run the same steps, whoever noticed first.
 */
enum vx_rp_state {
	VX_RP_NONE = 0,
	VX_RP_DRAIN,  /* QPs in ERR, waiting for the flush markers */
	VX_RP_PORT,   /* waiting for the port to be ACTIVE again */
	VX_RP_HELLO,  /* HELLO sent, waiting for the peer's */
	VX_RP_READY,  /* READY sent, waiting for the peer's */
	VX_RP_RESEND, /* sending again what the peer lacks */
};

struct vx_replay {
	enum vx_rp_state state;
	uint64_t start, deadline;
	uint32_t epoch; /* replays begun (both sides count alike); the
			   low 20 bits tag the receive WRs' ids */
	uint32_t marks; /* flush markers still to come */
	uint32_t psn;	/* our new PSN */
	uint64_t have;	/* fragments we hold, in order */
	int peer_hello, peer_ready;
	uint32_t peer_psn;
	uint64_t peer_have, peer_next;
	uint64_t resend; /* next fragment to send again */
	uint64_t resent;
	uint8_t peer_rdv[OHC_VX_RDV_REPORT]; /* the peer's HELLO report */
	struct vx_rdv_replayed rdv;	     /* what was done with it */
	char why[160];
};

/*
 * Pulled fragments (OPENHCCL_RDMA_PULL_KB): a message of at least that
 * size on the slot path goes in fragments of about half its size (at
 * most a slot), and every second one is pulled: the sender copies its
 * payload into its staging slot, behind this descriptor, and writes
 * only the header and the descriptor into the peer's slot (header flag
 * VX_PULL_FLAG in rdv); the receiver, when the fragment is next in
 * order, RDMA-reads the payload from the staging slot straight into the
 * destination (a COPY receive whose buffer registers through the
 * cache), else into its own slot and delivers it from there, and frees
 * the slot only then, so the credits guard the staging copy as they
 * guard the ring and the send completes when posted, as a copied one
 * does. Under rxe all protocol work of a READ (copies, ICRC) runs in
 * the reader's context, that of a WRITE in the writer's: each side's
 * CPU moves half the message, and the receiver copies only the pushed
 * half.
 */
struct vx_pull_desc {
	uint64_t addr; /* the payload in the sender's staging slot */
	uint32_t rkey; /* of the staging copy */
	uint32_t pad;
};

#define OHC_VX_PULL_PAD 64u /* descriptor room before a pulled payload */

struct ohc_verbs_ep;

struct ohc_verbs_iface {
	struct ohc_iface super;
	/* device */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	uint8_t port;
	int gid_index;
	union ibv_gid gid;
	enum ibv_mtu mtu;
	char dev_name[64];
	char ip[64];
	/* setup */
	int listen_fd;
	struct sockaddr_storage listen_addr;
	uint64_t session;
	/* geometry and QP attributes (same on every rank) */
	uint32_t nqps, slots, slot_bytes, sq_depth, rq_depth;
	uint32_t timeout, retry_cnt, tc, sl;
	uint32_t max_inline;		/* bytes a send may inline (all QPs) */
	uint32_t wr_bytes, wr_per_slot; /* largest WRITE WR, WRs per slot */
	uint32_t rdv_wr_bytes;		/* largest rendezvous WRITE WR */
	uint32_t rndv_bytes; /* messages this large go by rendezvous */
	uint32_t gx_bytes;   /* fragments this large gather (0: never) */
	uint64_t gx_sends;   /* sends that gathered (tests, counters) */
	uint32_t pull_bytes; /* messages this large pull half (0: never) */
	uint64_t pull_tx, pull_rx; /* fragments pulled (tests, counters) */
	struct vx_mr_cache mrc;
	struct vx_land land[OHC_VX_LAND_MAX];
	/* waiting */
	int wake_fd;
	int armed;	      /* CQ notification requested, not yet delivered */
	unsigned unacked;     /* CQ events not yet acknowledged */
	ohc_status_t aborted; /* reason sent to peers (iface_abort), or 0 */
	uint32_t replay_ms;   /* OPENHCCL_RDMA_REPLAY_MS */
	int port_down;	      /* a PORT_ERR came, no PORT_ACTIVE since */
	uint64_t port_checked; /* last ibv_query_port for a replay */
	/* Every op of the table runs under lock (vx_iface.c takes it for
	 * the *_locked functions); iface_wait drops it while it sleeps. The
	 * service thread (vx_service.c) takes it when free. */
	pthread_mutex_t lock;
	struct ohc_list svc_link; /* the service thread's list */
	uint64_t replays;     /* replays completed (tests, counters) */
	struct pollfd *wait_fds;       /* iface_wait: VX_WAIT_FDS(nranks) */
	unsigned wait_n;	       /* of them armed (0: none) */
	unsigned wait_lazy;	       /* the first of them of vx_lazy.c */
	struct ohc_verbs_ep **by_peer; /* nranks entries */
	/* connections (vx_conn.c, vx_lazy.c) */
	unsigned neps;		  /* eps handed to iface_connect */
	unsigned cq_eps;	  /* eps the CQ is sized for */
	unsigned nsetup;	  /* eps whose QPs exist */
	int lazy;		  /* eps connect on first use (vx_lazy.c) */
	int connect_now;	  /* never lazy (the NIC switch's new iface) */
	unsigned lz_busy;	  /* attempts and accepted sockets in flight */
	unsigned lz_tick;	  /* progress calls: the listener every 256th */
	int lz_poke;		  /* a lazy fd stirred: look at once */
	struct vx_lz_acc *lz_acc; /* accepted sockets, hello not yet read */
	unsigned lz_nacc;
	struct pollfd *lz_svc_fds; /* the service thread's: VX_WAIT_FDS */
};

struct ohc_verbs_ep {
	struct ohc_ep super;
	/* from the peer's blob and connect message */
	struct vx_blob peer_blob;
	uint64_t rem_ring;
	uint32_t rem_rkey;
	/* resources */
	int sock;
	uint64_t
		offered; /* setup: when our record last went to a higher rank */
	uint32_t nqps;
	struct ohc_vx_qp qps[OHC_VX_MAX_QPS];
	char *ring, *stage;	  /* receive slots, send staging (mmap) */
	char *ctrl_in, *ctrl_out; /* rendezvous CTS entries (after each) */
	size_t ring_len, map_len;
	struct ibv_mr *ring_mr, *stage_mr;
	struct ibv_send_wr *wrs;  /* slots + 1 */
	struct ibv_sge *sges;	  /* 2 * slots */
	struct ibv_recv_wr *rwrs; /* rq_depth */
	uint32_t psn;
	/* send side */
	struct ohc_list sendq;
	uint64_t tx_slots; /* fragments written */
	uint64_t tx_freed; /* slots the peer has freed */
	/* tx_slots after our last pulled fragment: until the peer freed
	 * that slot it may still read from our staging (quiesce waits) */
	uint64_t pull_end;
	/* gathering sends: records gx_head..gx_tail-1 (mod gx_n) wait for
	 * their WRs; the head of sendq, gx_req, is being posted, gathering
	 * into record gx_tail with registration gx_mr (NULL: it copies) */
	struct ohc_req *gx_req;
	struct vx_mr *gx_mr;
	struct vx_gx *gx;
	uint64_t *gx_marks; /* gx_n * nqps */
	uint32_t gx_n;
	uint64_t gx_head, gx_tail;
	/* receive side */
	struct ohc_list recvq;
	uint8_t *arrived; /* per slot: data landed */
	uint64_t rx_next; /* fragments consumed */
	uint64_t rx_reported;
	/* the pulled fragment next in order: its read is posted (rd), has
	 * completed (rd_done); it lands in the destination under rd_mr, or
	 * in its slot when rd_mr is NULL */
	int rd, rd_done;
	struct vx_mr *rd_mr;
	/* the message being received had a pulled fragment: its sender
	 * waits for the slot back, hand it back as the message completes */
	int rx_pulled;
	struct vx_rdv rdv;
	/* replay */
	struct vx_tx_src *tx_src; /* per slot */
	uint32_t rem_qpn[OHC_VX_MAX_QPS];
	uint32_t rem_mtu;
	uint8_t rem_gid[16];
	struct vx_replay rp;
	/* connection on first use (vx_lazy.c) */
	int set_up;	/* ep_setup ran (QPs, ring, MRs exist) */
	int lz_state;	/* enum vx_lz_state */
	int lz_fd;	/* our attempt's socket, or the answered one */
	int lz_told;	/* iface_abort's reason byte went to the peer */
	uint64_t lz_t0; /* first use (or the peer's hello) */
	uint64_t lz_deadline, lz_retry;
	struct ohc_frame_rx lz_rx; /* the answer on our attempt */
	/* state */
	int connected;
	ohc_status_t broken;	 /* OHC_OK, or why the ep is unusable */
	ohc_status_t peer_abort; /* the peer's announced failure, or OHC_OK */
	uint64_t closed_at;	 /* when its setup socket reached EOF, or 0 */
};

/* ---- wire format ------------------------------------------------------ */

#define VX_BLOB_MAGIC 0x4f484356u /* "OHCV" */
#define VX_CONN_MAGIC 0x4f484343u /* "OHCC" */
#define VX_VERSION 4u
#define VX_PULL_FLAG (1ull << 62) /* a header's rdv: a pulled fragment */

/* What each side of a pair sends the other once at connect time. */
struct vx_conn {
	uint32_t magic, version;
	uint64_t session;
	uint32_t from, to;
	uint32_t nqps, slots, slot_bytes, mtu;
	uint32_t psn, rkey;
	uint64_t ring;
	uint8_t gid[16];
	uint32_t qpn[OHC_VX_MAX_QPS];
};

/* The header at the start of every slot. */
struct vx_hdr {
	struct ohc_sig sig;
	uint64_t msg_len;
	uint64_t off; /* of this fragment in the message */
	uint32_t frag_len;
	uint32_t freed; /* sender's count of slots it freed (mod 2^32) */
	uint64_t rdv;	/* 0, or 1 << 63 | number: a rendezvous's message */
};

_Static_assert(sizeof(struct vx_hdr) == OHC_VX_HDR, "header is 64 bytes");

/* ---- the transport's files ---------------------------------------- */

/*
 * vx_iface.c holds the ops table. Every op but iface_open, iface_close,
 * iface_address, iface_reachable, ep_init, iface_connect, iface_wait and
 * iface_wake takes the iface's lock there (VX_LOCK) and runs one of the
 * *_locked functions below; those, and all they call, expect it held.
 * iface_wait takes it itself and drops it while it sleeps; the service
 * thread (vx_service.c) takes it when free.
 */
static inline struct ohc_verbs_iface *ohc_vx_iface(struct ohc_iface *iface)
{
	return ohc_derived_of(iface, struct ohc_verbs_iface);
}

static inline struct ohc_verbs_ep *ohc_vx_ep(struct ohc_ep *ep)
{
	return ohc_derived_of(ep, struct ohc_verbs_ep);
}

/* The iface's lock: every op of the table, the service thread. */
#define VX_LOCK(iface) pthread_mutex_lock(&ohc_vx_iface(iface)->lock)
#define VX_UNLOCK(iface) pthread_mutex_unlock(&ohc_vx_iface(iface)->lock)

#define OHC_VX_MAX_INLINE 256u /* inline bytes asked of every QP */
/* accepted setup sockets whose hello is not read yet, at most */
#define OHC_VX_LZ_ACC_MAX 64u
/* iface_wait's fds: channel, wake, async, the setup sockets; lazy: the
 * listener, an attempt per ep and the accepted sockets */
#define VX_WAIT_FDS(nranks) (4u + 2u * (nranks) + OHC_VX_LZ_ACC_MAX)

/* ---- connection setup and teardown (vx_conn.c) ---------------------- */

int ohc_vx_set_nonblock(int fd);
/* The setup listener on vi->ip (iface_open); logs its failure. */
ohc_status_t ohc_vx_listen(struct ohc_verbs_iface *vi);
/*
 * iface_connect: the CQ, then per ep its QPs (INIT, receives posted),
 * ring, staging and MRs; the connect records go over one TCP socket per
 * pair (the lower rank connects), the QPs to RTS. Bounded by deadline;
 * the listener closes and the service thread takes the iface on success.
 */
ohc_status_t ohc_vx_iface_connect(struct ohc_iface *iface, struct ohc_ep **eps,
				  unsigned n, uint64_t deadline);
/*
 * What iface_connect and the lazy connections (vx_lazy.c) share: room in
 * the CQ for one more ep's QPs (grown by doubling when lazy; logs its
 * failure), the ep's resources (QPs in INIT with receives posted, ring,
 * staging, MRs; once per ep), our connect record, the QPs to RTS towards
 * the peer's record (connected = 1), the peer's listener address and a
 * name for errors ("rank 5 (10.0.0.2:41234)"), the setup frames.
 */
ohc_status_t ohc_vx_cq_reserve(struct ohc_verbs_iface *vi,
			       struct ohc_verbs_ep *e);
ohc_status_t ohc_vx_ep_setup(struct ohc_verbs_iface *vi,
			     struct ohc_verbs_ep *e);
void ohc_vx_conn_fill(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		      struct vx_conn *c);
ohc_status_t ohc_vx_ep_rts(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			   const struct vx_conn *c);
socklen_t ohc_vx_peer_addr(const struct ohc_verbs_ep *e,
			   struct sockaddr_storage *ss, char *name,
			   size_t size);
extern const struct ohc_frame_proto ohc_vx_proto;
#define OHC_VX_T_CONN 1
/* The hello that carries c from us to rank `to` (to read one: to = us,
 * the sender comes back in from). */
struct ohc_hs_hello ohc_vx_conn_hello(const struct ohc_verbs_iface *vi,
				      uint32_t to, struct vx_conn *c);
/* A peer's connect record, checked for this iface (test/fuzz/vx_msgs.c
 * drives it): magic, version, session, from and to, geometry. */
ohc_status_t ohc_vx_conn_check(const struct ohc_verbs_iface *vi,
			       const struct vx_conn *c);
/* ep_quiesce (bounded: our last writes land, our last pulled fragment is
 * read) and ep_fini (everything of the ep freed). */
void ohc_vx_ep_quiesce_locked(struct ohc_ep *ep);
void ohc_vx_ep_fini_locked(struct ohc_ep *ep);

/* ---- connections on first use (vx_lazy.c) ------------------------- */

enum vx_lz_state {
	VX_LZ_NONE = 0,	  /* not used yet, no hello seen */
	VX_LZ_CONNECTING, /* our TCP connect in progress */
	VX_LZ_SENT,	  /* our hello sent, waiting for the answer */
	VX_LZ_WAIT,	  /* no socket: the lower rank's comes (higher), or
			     a new attempt at lz_retry (lower) */
	VX_LZ_ANSWERED,	  /* we answered the peer's hello: its ready byte */
};

/* An accepted setup socket whose hello is being read. */
struct vx_lz_acc {
	int fd;
	uint64_t t0;
	struct ohc_frame_rx rx;
};

/*
 * Lazy connections (OPENHCCL_RDMA_LAZY_RANKS): the first ep_send or
 * ep_recv of an unconnected ep queues its request and starts a
 * non-blocking connect (lazy_start); lazy_progress (iface_progress, the
 * wait, the service thread) drives every attempt, accepts and answers the
 * peers' hellos, and fails an ep not connected within
 * HCCL_CONNECT_TIMEOUT of its first use. When both sides start at once,
 * the attempt of the lower rank wins. Returns what moved.
 */
void ohc_vx_lazy_start(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e);
unsigned ohc_vx_lazy_progress(struct ohc_verbs_iface *vi);
/* Whether progress should call lazy_progress now (cheap). */
static inline int ohc_vx_lazy_due(struct ohc_verbs_iface *vi)
{
	return vi->lazy &&
	       (vi->lz_busy || vi->lz_poke || (++vi->lz_tick & 255) == 0);
}
/* The fds that need an answer (listener, attempts, accepted sockets),
 * with their events, into p (room for VX_WAIT_FDS); returns how many. */
unsigned ohc_vx_lazy_fds(struct ohc_verbs_iface *vi, struct pollfd *p);
/*
 * Rank `from` announced that its communicator failed (iface_abort's
 * byte): so did ours, and eps still connecting fail with its reason, as
 * their peers' own bytes would have failed them had they been connected
 * (a peer that failed and closed before our hello came refuses it).
 */
void ohc_vx_lazy_peer_abort(struct ohc_verbs_iface *vi, uint32_t from,
			    ohc_status_t reason);
/* iface_close: the accepted sockets; ep_fini: the ep's attempt. */
void ohc_vx_lazy_close(struct ohc_verbs_iface *vi);
void ohc_vx_lazy_ep_fini(struct ohc_verbs_ep *e);
/* Test seams: verbs eps connected on the iface; start the ep's
 * connection as its first use would (no-op when connected). */
unsigned ohc_verbs_connected(struct ohc_iface *iface);
void ohc_verbs_ep_connect(struct ohc_ep *ep);
/* iface_abort's reason byte (vi->aborted) to a peer whose ep connects
 * on first use: after our answer if we answered it, else once it
 * connects (a peer waiting on us may have started it). */
void ohc_vx_lazy_abort(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e);

/* ---- QPs (vx_qp.c) -------------------------------------------------- */

/* Create the ep's QP qpi on the iface's CQ, move it to INIT and post its
 * receives; logs its failure. */
ohc_status_t ohc_vx_qp_create(struct ohc_verbs_iface *vi,
			      struct ohc_verbs_ep *e, uint32_t qpi);
/* The state changes (errno of ibv_modify_qp, or 0); RTR towards the
 * peer's QP qpi (rem_qpn, rem_gid, rem_mtu). Replay uses them too. */
int ohc_vx_qp_init(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		   uint32_t qpi);
int ohc_vx_qp_rtr(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		  uint32_t qpi, uint32_t peer_psn);
int ohc_vx_qp_rts(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		  uint32_t qpi);
/* Test seam: force the ep's QPs into the error state (as a fatal QP error
 * would); the next progress sees the flushed completions. */
int ohc_verbs_ep_inject_qp_error(struct ohc_ep *ep);

/* ---- posting and the send protocols (vx_post.c) --------------------- */

/* Room on q's send queue for n more WRs, the chain being built counted. */
static inline int ohc_vx_sq_room(const struct ohc_verbs_iface *vi,
				 const struct ohc_vx_qp *q, uint32_t n)
{
	return q->sq_inflight + q->nchain + n <= vi->sq_depth;
}

/*
 * A chain of send WRs on one QP, built by chain_add and posted with one
 * ibv_post_send by chain_post: its last WR is signaled when asked, when
 * it carries gathered payload or when too many went unsignaled. 0 or the
 * post's errno.
 */
void ohc_vx_chain_add(struct ohc_vx_qp *q, struct ibv_send_wr *wr);
int ohc_vx_chain_post(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		      uint32_t qpi, int signal);
/* One signaled WR on QP qpi, not inside a chain being built; its wr_id
 * covers the unsignaled WRs before it (OHC_VX_WR_RDV: and names the
 * rendezvous table entry slot). 0 or the post's errno. */
int ohc_vx_post_signaled(struct ohc_verbs_ep *e, uint32_t qpi,
			 struct ibv_send_wr *wr, enum ohc_vx_wr_kind kind,
			 uint32_t slot);
/* Receive WRs on QP qpi up to rq_depth, tagged with the replay epoch. */
int ohc_vx_recvs_post(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		      uint32_t qpi);
/* A post failed with errno rc: fail the ep, naming the call. */
void ohc_vx_post_failed(struct ohc_verbs_ep *e, uint32_t qpi, const char *call,
			int rc);
/* ep_send: into the slots, or by rendezvous when large. */
ohc_status_t ohc_vx_ep_send_locked(struct ohc_ep *ep, struct ohc_req *req);
/* Push queued sends into free slots; returns the fragments posted. */
unsigned ohc_vx_ep_push(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e);
/* Post fragment f (tx_slots numbering) again from where it is; 0, 1: no
 * room on its QP now, -1: the ep failed. */
int ohc_vx_frag_resend(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		       uint64_t f);
/* Tell the peer how many slots we freed: when a quarter of the ring is
 * owed, or any with force. */
void ohc_vx_ep_credit(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		      int force);
/* Gathering sends (struct vx_gx): complete those whose WRs all completed,
 * in order; fail all of them, releasing their registrations. */
void ohc_vx_gx_reap(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e);
void ohc_vx_gx_fail(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		    ohc_status_t status);

/* ---- the receive side (vx_recv.c) ----------------------------------- */

/* ep_recv: from the slots, or by rendezvous when large. */
ohc_status_t ohc_vx_ep_recv_locked(struct ohc_ep *ep, struct ohc_req *req);
/* Hand landed fragments to posted receives, in order; returns how many. */
unsigned ohc_vx_ep_deliver(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e);
/*
 * A peer's slot header, checked for the receive it goes to (the fuzz
 * target drives it): the next fragment in order, within the receive and
 * the slot (less the pull descriptor's room when pulled), whole 64-byte
 * lines but for the last, the first one with the receive's length and
 * signature. 1 when it fits.
 */
int ohc_vx_hdr_fits(const struct vx_hdr *h, const struct ohc_req *req,
		    uint32_t slot_bytes);
/* Forget the pulled fragment's read (the QPs are stopped, gone or
 * flushed); its registration is released. */
void ohc_vx_rd_release(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e);
/*
 * The peer's immediate of a WRITE_WITH_IMM that landed (host order): a
 * rendezvous event, or the slot its fragment is in (the header's credits
 * are taken now, its data when ep_deliver gets there). A bad slot fails
 * the ep.
 */
void ohc_vx_imm_landed(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		       uint32_t imm, uint32_t qpn);
/*
 * The peer's count of slots it freed (32 bits of it): newer counts move
 * tx_freed forward, but never past what we wrote. A count beyond that is
 * a protocol error: credits for slots never sent would let ep_push post
 * more fragments than the ring (and the WR and SGE arrays) hold.
 * 0: fine; -1: the ep failed.
 */
int ohc_vx_tx_freed_update(struct ohc_verbs_ep *e, uint32_t freed,
			   uint32_t qpn);

/* ---- completions, progress, waiting (vx_cq.c) ----------------------- */

/* Drain the CQ; returns the completions seen. */
unsigned ohc_vx_cq_poll(struct ohc_verbs_iface *vi);
unsigned ohc_vx_iface_progress_locked(struct ohc_iface *iface);
ohc_status_t ohc_vx_iface_wait(struct ohc_iface *iface, int timeout_ms);
unsigned ohc_vx_iface_wait_arm(struct ohc_iface *iface, struct pollfd **fds_p);
void ohc_vx_iface_wait_disarm(struct ohc_iface *iface);
void ohc_vx_iface_wake(struct ohc_iface *iface);

/* ---- failures and liveness (vx_fail.c) ------------------------------ */

/* Complete every request of q with status. */
void ohc_vx_queue_complete(struct ohc_list *q, ohc_status_t status);
/* Fail the ep: log once naming the peer, QP qpi (or number qpn) and why;
 * fail every posted request, stop the QPs. */
void ohc_vx_ep_fail(struct ohc_verbs_ep *e, uint32_t qpi, const char *why);
void ohc_vx_ep_fail_qpn(struct ohc_verbs_ep *e, uint32_t qpn, const char *why);
/* Fail what the ep holds beyond its queues (gathering sends, the pulled
 * read, rendezvous) with status and release their registrations. */
void ohc_vx_ep_release(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		       ohc_status_t status);
/* The device's async events (QP and port errors, ports back). */
void ohc_vx_async_events(struct ohc_verbs_iface *vi);
/* The setup socket: replay handshakes, the peer's abort byte, EOF. */
void ohc_vx_ep_sock_check(struct ohc_verbs_ep *e);
ohc_status_t ohc_vx_ep_check_locked(struct ohc_ep *ep);
void ohc_vx_iface_abort_locked(struct ohc_iface *iface, ohc_status_t reason);
void ohc_vx_ep_cancel_locked(struct ohc_ep *ep, ohc_status_t status);

/* ---- the device (vx_dev.c) ------------------------------------------ */

/* Device, port and GID for a rank; fills the iface fields ctx, port,
 * gid_index, gid, mtu, dev_name, ip. */
ohc_status_t ohc_vx_dev_open(struct ohc_verbs_iface *vi, const char *ip,
			     const char *ip_origin, const char *dev_name,
			     int gid_index);

/* ---- replay (vx_replay.c) ------------------------------------------- */

/*
 * start: the link to the peer failed in a way that may pass (why says
 * how); 1 if a replay runs now (the caller must not fail the ep), 0 if it
 * cannot (disabled, the peer aborted): fail the ep.
 * progress: drive it (each progress call while e->rp.state). msg: a
 * handshake message of type t from the setup socket.
 */
int ohc_vx_replay_start(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			const char *why);
void ohc_vx_replay_progress(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e);
void ohc_vx_replay_msg(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		       char t, const uint8_t *body);
/* Where a replay in progress waits, in words ("no HELLO from the peer"). */
const char *ohc_vx_replay_stage(const struct ohc_verbs_ep *e);
#define OHC_VX_RP_HELLO 'H'
#define OHC_VX_RP_READY 'Y'
/* bytes after the type byte: 32, then the rendezvous report */
#define OHC_VX_RP_BODY (32 + OHC_VX_RDV_REPORT)
/* Whether the iface's port is ACTIVE now. */
int ohc_vx_port_active(struct ohc_verbs_iface *vi);
/*
 * A send that failed locally (IBV_WC_LOC_QP_OP_ERR): whether the link
 * went down under it. rxe fails what it transmits on a netdev going down
 * before it reports the port down, so the async events are read first,
 * then the port (ohc_vx_port_active) and the netdev holding vi->ip
 * (IFF_UP and IFF_RUNNING) are asked.
 */
int ohc_vx_link_lost(struct ohc_verbs_iface *vi);

/* ---- the service thread (vx_service.c) ------------------------------ */

/* Add a connected iface; remove it before it closes. */
void ohc_vx_service_add(struct ohc_verbs_iface *vi);
void ohc_vx_service_del(struct ohc_verbs_iface *vi);

#endif
