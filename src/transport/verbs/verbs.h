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

#include "transport/transport.h"
#include "transport/verbs/vx_proto.h"
#include "transport/verbs/vx_rdv.h"
#include "transport/verbs/vx_wrap.h"
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
	uint8_t msg[40]; /* a handshake message read in part */
	size_t msg_got;
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
	/* Every op of the table runs under lock (the *_locked functions of
	 * vx_iface.c); iface_wait drops it while it sleeps. The service
	 * thread (vx_service.c) takes it when free. */
	pthread_mutex_t lock;
	struct ohc_list svc_link; /* the service thread's list */
	uint64_t replays;     /* replays completed (tests, counters) */
	struct pollfd *wait_fds;       /* iface_wait: 3 + nranks */
	struct ohc_verbs_ep **by_peer; /* nranks entries */
};

struct ohc_verbs_ep {
	struct ohc_ep super;
	/* from the peer's blob and connect message */
	struct vx_blob peer_blob;
	uint64_t rem_ring;
	uint32_t rem_rkey;
	/* resources */
	int sock;
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
	/* state */
	int connected;
	ohc_status_t broken;	 /* OHC_OK, or why the ep is unusable */
	ohc_status_t peer_abort; /* the peer's announced failure, or OHC_OK */
};

/* Device, port and GID for a rank (vx_dev.c); fills the iface fields
 * ctx, port, gid_index, gid, mtu, dev_name, ip. */
ohc_status_t ohc_vx_dev_open(struct ohc_verbs_iface *vi, const char *ip,
			     const char *ip_origin, const char *dev_name,
			     int gid_index);

/* Fail the ep (vx_iface.c): log once naming the peer, QP qpi and why. */
void ohc_vx_ep_fail(struct ohc_verbs_ep *e, uint32_t qpi, const char *why);

/* What replay needs of vx_iface.c: the QPs' states, fragment posting, the
 * setup socket's messages. */
int ohc_vx_qp_init(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		   uint32_t qpi);
int ohc_vx_qp_rtr(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		  uint32_t qpi, uint32_t peer_psn);
int ohc_vx_qp_rts(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		  uint32_t qpi);
/* Post fragment f (tx_slots numbering) again from where it is; 0, 1: no
 * room on its QP now, -1: the ep failed. */
int ohc_vx_frag_resend(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		       uint64_t f);
int ohc_vx_recvs_post(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		      uint32_t qpi);

/*
 * Replay (vx_replay.c). start: the link to the peer failed in a way that
 * may pass (why says how); 1 if a replay runs now (the caller must not
 * fail the ep), 0 if it cannot (disabled, rendezvous in flight, the peer
 * aborted): fail the ep. progress: drive it (each progress call while
 * e->rp.state). msg: a handshake message of type t from the setup socket.
 */
int ohc_vx_replay_start(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			const char *why);
void ohc_vx_replay_progress(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e);
void ohc_vx_replay_msg(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		       char t, const uint8_t *body);
#define OHC_VX_RP_HELLO 'H'
#define OHC_VX_RP_READY 'Y'
#define OHC_VX_RP_BODY 32 /* bytes after the type byte */
/*
 * The service thread (vx_service.c): add a connected iface, remove it
 * before it closes. For the thread (vx_iface.c): the fds to watch (setup
 * sockets, the async-event fd; skipped, 0, when the iface is in use),
 * whether a replay runs (it needs steps), and one round of service
 * (vi->lock held: events, sockets, replays; then the iface is woken).
 */
void ohc_vx_service_add(struct ohc_verbs_iface *vi);
void ohc_vx_service_del(struct ohc_verbs_iface *vi);
int ohc_vx_service_fds(struct ohc_verbs_iface *vi, struct pollfd **pfd,
		       struct ohc_verbs_iface ***owner, size_t *n, size_t *cap);
int ohc_vx_service_busy(struct ohc_verbs_iface *vi);
void ohc_vx_service_locked(struct ohc_verbs_iface *vi);

/* Whether the iface's port is ACTIVE now. */
int ohc_vx_port_active(struct ohc_verbs_iface *vi);
/* The ep's rendezvous holds nothing: replay is possible. */
int ohc_vx_rdv_idle(const struct ohc_verbs_ep *e);

/* Test seam: force the ep's QPs into the error state (as a fatal QP error
 * would); the next progress sees the flushed completions. */
int ohc_verbs_ep_inject_qp_error(struct ohc_ep *ep);

#endif
