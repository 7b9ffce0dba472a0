/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TRANSPORT_SHM_H
#define OHC_TRANSPORT_SHM_H

/*
 * Private to src/transport/shm/: the iface and ep objects of the shm
 * transport and the functions its files share. Threading as in
 * transport.h: one thread drives an iface and its eps; only
 * ohc_shm_bell_ring() on our own bell (iface_wake) runs on other threads.
 */
#include <poll.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "transport/shm/shm_ring.h"
#include "core/tp.h"
#include "util/frame.h"
#include "util/compiler.h"
#include "util/list.h"

#define OHC_SHM_HOSTID_MAX 200 /* hostid bytes kept verbatim in the blob */
#define OHC_SHM_FRAG_CAP (64u << 10) /* largest fragment */
#define OHC_SHM_ZC_CACHE 8     /* peer exports kept mapped per ep */
/* export ids of shared aclrtMalloc memory (zerocopy/'s count from 1) */
#define OHC_SHM_ZC_IMPLICIT (1ull << 63)

/* A peer's exported memfd, mapped read-only (zero-copy receives). */
struct ohc_shm_zc_import {
	uint64_t id; /* the peer's export id; 0: empty slot */
	void *base;
	size_t size;
	uint64_t last_use;
};

struct ohc_shm_iface {
	struct ohc_iface super;
	uint64_t session;
	pid_t pid;
	uint64_t proc_token;
	int numa_node;
	size_t ring_bytes; /* record bytes per receive ring; 0 until built */
	int prefault;	   /* fault rings in at init (OPENHCCL_SHM_PREFAULT) */
	size_t cma_min;	   /* messages this large go single-copy by CMA */
	size_t zc_min;	   /* ... or from shared aclrtMalloc memory, mapped */
	char hostid[OHC_SHM_HOSTID_MAX + 1];
	uint64_t hostid_hash; /* of the full hostid */
	uint32_t hostid_len;  /* of the full hostid */

	int listen_fd; /* abstract unix socket; -1 after connect */
	int seg_fd;    /* our segment's memfd; -1 after connect */
	int bell_fd;   /* our doorbell's eventfd (the wait set's sleep) */
	struct pollfd bell_pfd; /* ... as iface_wait_arm hands it out */
	struct ohc_shm_seg_hdr *hdr; /* our segment, page 0 (bell) */
	size_t hdr_bytes;
	void *body; /* our segment after page 0: directory + rings */
	size_t body_bytes;
	int connected;

	struct ohc_list eps;	 /* every ep of this iface (ep->link) */
	atomic_int wake_pending; /* iface_wake since the last wait */
	int cma_probe_ok;	 /* process_vm_readv works at all */
};

struct ohc_shm_ep {
	struct ohc_ep super;
	struct ohc_list link; /* in iface->eps */
	pid_t pid;	      /* the peer's pid (checked with SO_PEERCRED) */
	int pidfd;	      /* -1 if pidfd_open is unavailable */
	int connected;
	int dead_logged;
	ohc_status_t err; /* set by ep_cancel or a protocol failure */

	void *peer_seg; /* the peer's whole segment, mapped */
	size_t peer_seg_bytes;
	struct ohc_shm_bell *peer_bell;
	int peer_bell_fd; /* the peer's doorbell eventfd; -1 until mapped */

	/* sending: our ring in the peer's segment; we are its producer */
	struct ohc_shm_ring_ctl *tx;
	char *tx_data;
	uint64_t tx_bytes;
	uint64_t tx_max_frag;
	uint64_t tx_tail; /* bytes written into tx (never published) */
	int rx_multi;	  /* the last record read had payload lines */
	uint64_t tx_head; /* tx->head as last read (reads it only when short) */
	uint64_t tx_acked;     /* rendezvous sends completed */
	int cold;	       /* rings not faulted in yet (see ohc_shm_warm) */
	struct ohc_list sends; /* posted, not fully written (FIFO) */
	struct ohc_list rndv;  /* written as rendezvous, awaiting ack */

	/* receiving: the peer's ring in our segment; we are its consumer */
	struct ohc_shm_ring_ctl *rx;
	char *rx_data;
	uint64_t rx_bytes;
	uint64_t rx_max_frag;
	uint64_t rx_head;      /* our copy of rx->head */
	uint64_t rx_acked;     /* rendezvous messages read */
	struct ohc_list recvs; /* posted, not complete (FIFO) */
	int discard;	       /* dropping the rest of a rejected message */
	int rx_cma;	       /* we may read the peer's memory */
	struct ohc_shm_rec rndv_rec; /* rendezvous being read (when rndv_on) */
	int rndv_on;
	size_t rndv_done;
	void *bounce;	      /* CMA reads for reductions */
	const char *rndv_src; /* ZC: the message in our mapping, else NULL */
	struct ohc_shm_zc_import zc_imp[OHC_SHM_ZC_CACHE];
	uint64_t zc_clock;
	int zc_warned;
};

static inline struct ohc_shm_iface *ohc_shm_iface_of(struct ohc_iface *iface)
{
	return ohc_derived_of(iface, struct ohc_shm_iface);
}

static inline struct ohc_shm_ep *ohc_shm_ep_of(struct ohc_ep *ep)
{
	return ohc_derived_of(ep, struct ohc_shm_ep);
}

/*
 * The one message each way on a connection of the fd exchange (abstract
 * unix socket): a hello (util/hs.h) with the session as its token, from
 * and to the ranks; CONNECT has no body, REPLY the size of the replier's
 * segment (u64) and its memfd attached.
 */
extern const struct ohc_frame_proto ohc_shm_proto;
enum { OHC_SHM_HELLO_CONNECT = 1, OHC_SHM_HELLO_REPLY = 2 };
#define OHC_SHM_REPLY_BYTES 8

/*
 * shm_iface.c. Complete and unlink every posted request of the ep (sends,
 * rendezvous sends awaiting their ack, receives) with status.
 */
void ohc_shm_fail_all(struct ohc_shm_ep *sep, ohc_status_t status);
/*
 * Why the peer stopped: OHC_ERR_DESYNC if it announced (iface_abort) that
 * it failed on a mismatched operation, OHC_ERR_REMOTE for anything else.
 */
ohc_status_t ohc_shm_peer_stop_reason(const struct ohc_shm_ep *sep);

/*
 * shm_tx.c, the producer side (the thread driving the ep). push: move
 * posted sends into the ring; returns records written. reap_rndv:
 * complete the rendezvous sends the consumer acknowledged; returns how
 * many. tx_ready: whether the front send (sends not empty) could write
 * something now. tx_implicit_zc: a send about to be posted becomes a ZC
 * send when it is large and out of shared aclrtMalloc memory.
 */
unsigned ohc_shm_push(struct ohc_shm_ep *sep);
unsigned ohc_shm_reap_rndv(struct ohc_shm_ep *sep);
int ohc_shm_tx_ready(struct ohc_shm_ep *sep);
void ohc_shm_tx_implicit_zc(struct ohc_shm_ep *sep, struct ohc_req *req);

/*
 * shm_rx.c, the consumer side (the thread driving the ep): drain records
 * into posted receives; returns records read. A broken stream fails
 * everything posted on the ep.
 */
unsigned ohc_shm_pull(struct ohc_shm_ep *sep);

/* shm_seg.c: our segment and the mappings of the peers'. */
ohc_status_t ohc_shm_seg_open(struct ohc_shm_iface *sif);
void ohc_shm_seg_close(struct ohc_shm_iface *sif);
/* The ring size for n peers where none was given (OPENHCCL_SHM_RING_KB=0). */
size_t ohc_shm_auto_ring(unsigned n);
/*
 * Lay out the receive rings (one per ep; ohc_shm_auto_ring's size unless
 * one was given) after page 0, map them, bind them to our NUMA node,
 * prefault them, then seal the memfd's size.
 */
ohc_status_t ohc_shm_seg_build(struct ohc_shm_iface *sif,
			       struct ohc_shm_ep **eps, unsigned n);
/* Map the peer's segment from its memfd (fd, seg_bytes as announced)
 * and find the ring we write; refused (logged) unless it checks out. */
ohc_status_t ohc_shm_seg_map_peer(struct ohc_shm_iface *sif,
				  struct ohc_shm_ep *sep, int fd, int bell_fd,
				  uint64_t seg_bytes);
/*
 * A pair's rings not prefaulted at connect (above OPENHCCL_SHM_PREFAULT
 * local ranks) are faulted in whole when the pair first carries a
 * message: the ring we write by our first send, the ring we read by our
 * first receive. Pages faulted one by one in the data path cost several
 * times the traffic itself (16 ranks on 2 cores: 8 KiB AllReduce 3 ms
 * instead of 0.5 ms while the rings filled). Clears sep->cold when both
 * are done.
 */
void ohc_shm_warm(struct ohc_shm_ep *sep, int tx);
/*
 * Attach to the ring we write in the peer's segment if that has not
 * happened yet (above OPENHCCL_SHM_PREFAULT local ranks it waits for the
 * pair's first traffic, see shm_seg.c): OHC_OK, or why the peer's
 * segment is refused (logged; the ep is failed then).
 */
ohc_status_t ohc_shm_attach(struct ohc_shm_ep *sep);

void ohc_shm_ep_unmap(struct ohc_shm_ep *sep);
/*
 * Fault seam for unit tests (shm_xchg.c): the listener reads this many
 * valid hellos and closes their connections without answering or
 * logging, as a peer did twice in CI; the connecting rank connects again.
 */
extern int ohc_shm_test_drop_hellos;
/*
 * ... and this many answers count as sent although they were not (the
 * connection closes without a word, as if the answer had been lost on
 * its way: what a CI run saw, the listener refusing a second hello from
 * a rank whose connection had ended with no answer).
 */
extern int ohc_shm_test_lose_answers;
/* Whether a peer's directory entry (a copy: the peer may change the
 * live one) names a ring inside its segment of seg_bytes. */
int ohc_shm_dir_ent_valid(const struct ohc_shm_dir_ent *ent,
			  uint64_t seg_bytes);

/*
 * Checks of what a peer sends at connect time (pure, no logging; fuzzed
 * by test/fuzz/shm_seg.c; hellos are util/hs.h's). A peer's segment
 * (seg_bytes, mapped at seg): NULL when its header (a copy, in *head_p)
 * is of this version and session, owned by `owner`, of that size, with
 * its directory inside it, and a valid directory entry names `me` as a
 * producer (a copy in *ent_p); else why (shm_seg.c).
 */
const char *ohc_shm_seg_find_ring(const void *seg, uint64_t seg_bytes,
				  uint64_t session, uint32_t owner, uint32_t me,
				  struct ohc_shm_seg_hdr *head_p,
				  struct ohc_shm_dir_ent *ent_p);

/* shm_xchg.c: the memfd exchange at connect time, then every mapping. */
ohc_status_t ohc_shm_seg_connect(struct ohc_shm_iface *sif,
				 struct ohc_shm_ep **eps, unsigned n,
				 uint64_t deadline);
/* Abstract socket address of (session, rank); returns its length. */
socklen_t ohc_shm_sockaddr(uint64_t session, uint32_t rank,
			   struct sockaddr_un *sa);

/*
 * Tests: when not 0, overrides the iface's cma_bytes (SIZE_MAX: never).
 * Set before the iface opens.
 */
extern size_t ohc_shm_cma_threshold;

/* shm_cma.c: single-copy reads out of a peer (process_vm_readv). */
int ohc_shm_cma_probe(pid_t pid, uint64_t addr, uint64_t expect);
ohc_status_t ohc_shm_cma_read(const struct ohc_shm_ep *sep, void *dst,
			      uint64_t addr, size_t len);

/* shm_zc.c: zero-copy imports of a peer's exported memory. */
const char *ohc_shm_zc_import(struct ohc_shm_ep *sep,
			      const struct ohc_mem_desc *desc, size_t len);
void ohc_shm_zc_drop_all(struct ohc_shm_ep *sep);
ohc_status_t ohc_shm_ep_mem_map(struct ohc_ep *ep,
				const struct ohc_mem_desc *desc, void **addr_p);
void ohc_shm_ep_mem_unmap(struct ohc_ep *ep, void *addr, size_t len);

#endif
