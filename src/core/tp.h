/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_CORE_TP_H
#define OHC_CORE_TP_H

/*
 * The transport interface: the core drives it (the executor), the
 * transports of src/transport implement it. A transport moves whole
 * messages between one rank and its peers; it knows nothing of
 * collectives, HCCL names or the bootstrap: it produces an opaque address
 * blob per iface, the comm layer allgathers the blobs, and the transport
 * connects endpoints from them.
 *
 * Objects: an iface is one rank's instance of a transport within one
 * communicator; an ep is that rank's endpoint to one peer. The core
 * allocates ops->iface_size / ops->ep_size bytes (zeroed) and the transport
 * fills them; struct ohc_iface / ohc_ep are the embedded `super` (first
 * member) of the transport's own structs.
 *
 * Threading: one thread at a time drives an iface (the executor of the
 * communicator holds its lock); only iface_wake may be called from any
 * thread. Nothing blocks except iface_connect and iface_wait, and both are
 * bounded.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/req.h"
#include "util/status.h"

#define OHC_ADDR_MAX 256 /* max bytes of an iface address blob */
/* a sleep's first part, after which the sleeper looks again (wait set,
 * transport/bell.h); shorter than the shortest sleep (1 ms) */
#define OHC_TP_SETTLE_US 100
_Static_assert(OHC_TP_SETTLE_US < 1000, "the settle fits in any sleep");

/* Capability bits; a unit test checks they match the wired ops. */
enum {
	OHC_TP_CAP_SAME_PROCESS = 1u << 0, /* reaches peers in this process:
					      their addresses are ours */
	OHC_TP_CAP_SAME_HOST = 1u << 1,	   /* reaches peers on this host */
	OHC_TP_CAP_REMOTE_HOST = 1u << 2,  /* reaches peers on other hosts */
	OHC_TP_CAP_WAIT = 1u << 3,	   /* iface_wait sleeps for real */
	OHC_TP_CAP_NIC = 1u << 4, /* bound to a network device (device_ip);
				     what HcclCommWorkingDevNicSet moves */
	OHC_TP_CAP_WAIT_SET = 1u << 5, /* iface_wait_arm/disarm: its sleep
					  joins one poll() with others' */
};

struct pollfd;

struct ohc_transport_ops;

struct ohc_iface {
	const struct ohc_transport_ops *ops;
	uint32_t rank;
	uint32_t nranks;
};

struct ohc_ep {
	struct ohc_iface *iface;
	uint32_t peer;
};

struct ohc_transport_params {
	uint32_t rank, nranks;
	uint64_t session;   /* communicator-unique token, same on all ranks */
	const char *hostid; /* this rank's host identity */
	int numa_node;	    /* where this rank's receive memory should live */
	size_t ring_bytes;  /* shm: bytes per pair ring */
	size_t cma_bytes;   /* shm: CMA reads from this size, 0 = never */
	size_t zc_bytes;    /* shm: implicit zero copy from, 0 = never */
	unsigned spin;	    /* polls before sleeping */
	const char *
		device_ip; /* verbs: the rank's RDMA IP (rank table), or NULL */
	const char *device_ip_key; /* its rank-table key, for errors */
	uint32_t rdma_tc;	   /* verbs: traffic class */
	uint32_t rdma_sl;	   /* verbs: service level */
	/* verbs: iface_connect connects every ep before it returns, even
	 * where it would connect them on first use (the NIC switch checks
	 * the new NIC before it swaps) */
	int connect_now;
};

struct ohc_transport_ops {
	size_t size; /* sizeof(struct ohc_transport_ops) */
	const char *name;
	uint32_t caps;
	size_t iface_size; /* bytes of the transport's iface struct */
	size_t ep_size;	   /* bytes of the transport's ep struct */

	/* Open this rank's iface. Fills *iface (allocated by the core). */
	ohc_status_t (*iface_open)(struct ohc_iface *iface,
				   const struct ohc_transport_params *params);
	/* Release everything the iface owns; eps were finalized before. */
	void (*iface_close)(struct ohc_iface *iface);
	/* Write the address blob (<= OHC_ADDR_MAX bytes) into blob. */
	ohc_status_t (*iface_address)(struct ohc_iface *iface, void *blob,
				      size_t *len_p);
	/* 1 if this iface can reach the peer whose blob is given. */
	int (*iface_reachable)(struct ohc_iface *iface, const void *blob,
			       size_t len);
	/* Prepare ep to peer from the peer's blob (no communication). */
	ohc_status_t (*ep_init)(struct ohc_iface *iface, struct ohc_ep *ep,
				uint32_t peer, const void *blob, size_t len);
	/*
	 * Connect n eps of this iface. Collective: every peer in eps calls it
	 * for its ep to us at about the same time. Blocks until done or the
	 * deadline (ohc_time_ns based) passes (OHC_ERR_TIMEOUT naming peers).
	 */
	ohc_status_t (*iface_connect)(struct ohc_iface *iface,
				      struct ohc_ep **eps, unsigned n,
				      uint64_t deadline);
	/*
	 * Wait (bounded) until every work request ep posted is complete, so
	 * that ep_fini needs nothing more from the peer: peers that tear
	 * down a pair quiesce both ends first, then fini (the NIC switch).
	 * Stub: nothing to wait for.
	 */
	void (*ep_quiesce)(struct ohc_ep *ep);
	/* Tear down one ep; pending requests are canceled first. */
	void (*ep_fini)(struct ohc_ep *ep);

	/* Post a send of req->len bytes from req->sbuf. Non-blocking. */
	ohc_status_t (*ep_send)(struct ohc_ep *ep, struct ohc_req *req);
	/* Post a receive of the next message from the peer. Non-blocking. */
	ohc_status_t (*ep_recv)(struct ohc_ep *ep, struct ohc_req *req);
	/* Make progress on all eps; returns how many events happened. */
	unsigned (*iface_progress)(struct ohc_iface *iface);
	/*
	 * Sleep until some peer may have made progress for us, a wake, or
	 * timeout_ms. Spurious returns are fine. OHC_OK or an error.
	 */
	ohc_status_t (*iface_wait)(struct ohc_iface *iface, int timeout_ms);
	/* Wake a thread sleeping in iface_wait (any thread may call). */
	void (*iface_wake)(struct ohc_iface *iface);
	/*
	 * The wait set: the waiter (core/wait.c) sleeps on several
	 * transports at once in one poll(), woken by whichever stirs first.
	 * iface_wait_arm says we are about to sleep, as iface_wait does,
	 * and hands out the transport's own pollfds (*fds_p): how many, or
	 * 0 when something is ready now (do not sleep). After the poll has
	 * filled in their revents (or not: 0 returned, a timeout),
	 * iface_wait_disarm takes what woke us and ends the sleep; it is
	 * called after every arm. An armed transport may be armed again
	 * before the disarm (a second look: it hands out its fds anew, or
	 * 0), and is: the first poll after arming lasts at most
	 * OHC_TP_SETTLE_US, for transports whose ringers can miss an owner
	 * that is arming (transport/bell.h). Optional (OHC_TP_CAP_WAIT_SET):
	 * without them a step pending on several transports sleeps 1 ms on
	 * each in turn.
	 */
	unsigned (*iface_wait_arm)(struct ohc_iface *iface,
				   struct pollfd **fds_p);
	void (*iface_wait_disarm)(struct ohc_iface *iface);
	/* OHC_OK if the peer looks alive, OHC_ERR_REMOTE if it is gone. */
	ohc_status_t (*ep_check)(struct ohc_ep *ep);
	/*
	 * Fail every posted request of ep with status and forget them. The
	 * ep is unusable for data afterwards (its stream state is lost).
	 */
	void (*ep_cancel)(struct ohc_ep *ep, ohc_status_t status);
	/*
	 * Tell every peer that this rank's communicator failed with reason
	 * (< 0), so a peer blocked on us fails at its next ep_check instead
	 * of waiting for its timeout. ep_check then returns OHC_ERR_DESYNC
	 * for a peer that failed on a mismatched operation, OHC_ERR_REMOTE
	 * for any other reason. The first reason sticks.
	 */
	void (*iface_abort)(struct ohc_iface *iface, ohc_status_t reason);

	/*
	 * Zero-copy (optional; src/zerocopy/README.md). A send whose
	 * req->smem is set reads exported memory; a transport may then move
	 * it without staging (shm: the reader maps the memfd) or ignore smem.
	 *
	 * mem_reg: memory [addr, addr+len), backed by desc, becomes exported
	 * (HcclCommActivateCommMemory, a symmetric window). A transport that
	 * must register memory before peers can reach it (verbs: ibv_reg_mr)
	 * does it here; *handle_p comes back to mem_dereg when the memory is
	 * deactivated. The stub registers nothing (OHC_OK, NULL handle): shm
	 * needs nothing, its readers import the memfd lazily (pidfd_getfd).
	 */
	ohc_status_t (*mem_reg)(struct ohc_iface *iface, void *addr, size_t len,
				const struct ohc_mem_desc *desc,
				void **handle_p);
	void (*mem_dereg)(struct ohc_iface *iface, void *handle);
	/*
	 * Map the peer's exported memory desc (the whole memfd,
	 * desc->fd_size bytes, read-write) into this process for loads and
	 * stores: symmetric windows. *addr_p is the base of the memfd; undo
	 * with ep_mem_unmap. Stub: OHC_ERR_UNSUPPORTED (no load/store path).
	 */
	ohc_status_t (*ep_mem_map)(struct ohc_ep *ep,
				   const struct ohc_mem_desc *desc,
				   void **addr_p);
	void (*ep_mem_unmap)(struct ohc_ep *ep, void *addr, size_t len);
};

#endif
