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
#include <stdint.h>
#include <sys/socket.h>

#include "transport/transport.h"
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
	uint64_t *mark; /* per QP: its last WR (sq_done ordinal), 0: none */
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
	/* state */
	int connected;
	ohc_status_t broken;	 /* OHC_OK, or why the ep is unusable */
	ohc_status_t peer_abort; /* the peer's announced failure, or OHC_OK */
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

/*
 * Checks of what a peer sends (vx_iface.c; test/fuzz/vx_msgs.c drives
 * them). A connect record for this iface: magic, version, session, from
 * and to, geometry. A slot header for the receive it goes to: the next
 * fragment in order, within the receive and the slot (less the pull
 * descriptor's room when pulled), whole 64-byte lines but for the last,
 * the first one with the receive's length and signature. 1 when it fits.
 */
ohc_status_t ohc_vx_conn_check(const struct ohc_verbs_iface *vi,
			       const struct vx_conn *c);
int ohc_vx_hdr_fits(const struct vx_hdr *h, const struct ohc_req *req,
		    uint32_t slot_bytes);
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

/* Device, port and GID for a rank (vx_dev.c); fills the iface fields
 * ctx, port, gid_index, gid, mtu, dev_name, ip. */
ohc_status_t ohc_vx_dev_open(struct ohc_verbs_iface *vi, const char *ip,
			     const char *ip_origin, const char *dev_name,
			     int gid_index);

/* Fail the ep (vx_iface.c): log once naming the peer, QP qpi and why. */
void ohc_vx_ep_fail(struct ohc_verbs_ep *e, uint32_t qpi, const char *why);

/* Test seam: force the ep's QPs into the error state (as a fatal QP error
 * would); the next progress sees the flushed completions. */
int ohc_verbs_ep_inject_qp_error(struct ohc_ep *ep);

#endif
