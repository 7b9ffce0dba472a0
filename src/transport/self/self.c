/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The self transport: peers in the same process (the thread ranks of
 * HcclCommInitAll, or a rank talking to itself). No copy of its own: a send
 * is queued in the receiver's mailbox, and the receiver's progress hands
 * the sender's buffer straight to ohc_req_deliver, completing the receive
 * and then the send. A send therefore completes only after its receive.
 *
 * Each iface owns a mailbox (struct self_box), allocated apart from the
 * iface and reference counted, so a peer that still holds an ep to it can
 * post (and be refused) or ring it after the owner closed its iface.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "core/tp.h"
#include "transport/bell.h"
#include "transport/process.h"
#include "util/compiler.h"
#include "util/list.h"
#include "util/log.h"

#define SELF_BLOB_MAGIC 0x4f48434cu /* "OHCL" */
#define SELF_SLICE (256u << 10)	    /* bytes delivered per lock hold */

struct self_blob {
	uint32_t magic;
	uint32_t rank;
	int32_t pid;
	uint32_t pad;
	uint64_t session;
	uint64_t proc_token; /* ohc_process_token(): pids may repeat */
	uint64_t iface; /* the owner's iface pointer, looked up, never used */
};

/* Sends from one rank to the mailbox owner. */
struct self_src {
	struct ohc_list sends; /* FIFO of struct ohc_req (link) */
	int rx_dead;	       /* the owner canceled its ep to this rank */
	int tx_dead;	       /* this rank canceled its ep to the owner */
};

struct self_box {
	atomic_int refs;
	pthread_mutex_t lock; /* protects src[] and closed */
	int closed;	      /* the owner closed its iface */
	int aborted;	      /* the owner's communicator failed (< 0) */
	/* the owner's doorbell (a private futex: one process), and the
	 * eventfd it sleeps on in the waiter's wait set */
	struct ohc_bell bell;
	int bell_fd;
	atomic_int wake_pending;
	_Atomic uint32_t tx_done; /* the owner's sends completed by others */
	/* identity, fixed at open */
	const void *owner;
	uint64_t session;
	uint32_t rank, nranks;
	struct ohc_list reg_link; /* in box_registry, under registry_lock */
	struct self_src src[];	  /* [nranks], indexed by sender rank */
};

struct self_iface {
	struct ohc_iface super;
	struct self_box *box;
	struct pollfd bell_pfd; /* iface_wait_arm hands it out */
	pid_t pid;
	uint64_t proc_token;
	uint64_t session;
	uint32_t tx_seen; /* box->tx_done already reported by progress */
	struct ohc_list eps;
};

struct self_ep {
	struct ohc_ep super;
	struct ohc_list link;	   /* in iface->eps */
	const void *peer_iface;	   /* from the blob; only a lookup key */
	struct self_box *peer_box; /* referenced once connected */
	struct ohc_list recvs;	   /* our posted receives (FIFO) */
	ohc_status_t err;
	int connected;
	int dead_logged;
};

/* Live mailboxes of this process, to validate blob pointers. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ohc_list box_registry = OHC_LIST_INIT(box_registry);

static struct self_iface *self_iface(struct ohc_iface *iface)
{
	return ohc_derived_of(iface, struct self_iface);
}

static struct self_ep *self_ep(struct ohc_ep *ep)
{
	return ohc_derived_of(ep, struct self_ep);
}

static void box_get(struct self_box *box)
{
	atomic_fetch_add_explicit(&box->refs, 1, memory_order_relaxed);
}

static void box_put(struct self_box *box)
{
	if (atomic_fetch_sub_explicit(&box->refs, 1, memory_order_acq_rel) != 1)
		return;
	pthread_mutex_destroy(&box->lock);
	close(box->bell_fd);
	free(box);
}

/* Ring the owner's doorbell after publishing something for it. */
static void box_ring(struct self_box *box)
{
	ohc_bell_ring(&box->bell, box->bell_fd, false);
}

/* Complete a send on behalf of its poster (the caller holds box lock). */
static void send_complete_locked(struct ohc_req *s, ohc_status_t status)
{
	struct self_box *sender = s->tp_priv;

	ohc_list_del(&s->link);
	ohc_req_complete(s, status);
	atomic_fetch_add_explicit(&sender->tx_done, 1, memory_order_release);
}

/* Fail every send queued by one rank; rings the senders (lock held). */
static void src_fail_locked(struct self_src *src, ohc_status_t status)
{
	while (!ohc_list_empty(&src->sends)) {
		struct ohc_req *s =
			ohc_list_first(&src->sends, struct ohc_req, link);
		struct self_box *sender = s->tp_priv;

		box_get(sender); /* its poster may free it once completed */
		send_complete_locked(s, status);
		box_ring(sender);
		box_put(sender);
	}
}

static void fail_list(struct ohc_list *list, ohc_status_t status)
{
	while (!ohc_list_empty(list)) {
		struct ohc_req *req =
			ohc_list_first(list, struct ohc_req, link);

		ohc_list_del(&req->link);
		ohc_req_complete(req, status);
	}
}

static int blob_parse(const void *blob, size_t len, struct self_blob *b)
{
	if (len != sizeof(*b))
		return 0;
	memcpy(b, blob, sizeof(*b));
	return b->magic == SELF_BLOB_MAGIC;
}

static ohc_status_t self_iface_open(struct ohc_iface *iface,
				    const struct ohc_transport_params *params)
{
	struct self_iface *si = self_iface(iface);
	struct self_box *box;

	if (params->rank >= params->nranks) {
		OHC_ERROR(OHC_SS_INIT, "self: rank %u out of range (nranks %u)",
			  params->rank, params->nranks);
		return OHC_ERR_INVALID;
	}
	box = calloc(1, sizeof(*box) +
				(size_t)params->nranks * sizeof(box->src[0]));
	if (!box)
		return OHC_ERR_NO_MEMORY;
	box->bell_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (box->bell_fd < 0) {
		OHC_ERROR(OHC_SS_INIT, "self: rank %u: eventfd failed: %s",
			  params->rank, strerror(errno));
		free(box);
		return OHC_ERR_SYSCALL;
	}
	atomic_init(&box->refs, 1);
	pthread_mutex_init(&box->lock, NULL);
	box->owner = iface;
	box->session = params->session;
	box->rank = params->rank;
	box->nranks = params->nranks;
	for (uint32_t r = 0; r < params->nranks; r++)
		ohc_list_init(&box->src[r].sends);

	si->super.rank = params->rank;
	si->super.nranks = params->nranks;
	si->box = box;
	si->pid = getpid();
	si->proc_token = ohc_process_token();
	si->session = params->session;
	ohc_list_init(&si->eps);

	pthread_mutex_lock(&registry_lock);
	ohc_list_add_tail(&box_registry, &box->reg_link);
	pthread_mutex_unlock(&registry_lock);
	return OHC_OK;
}

static void self_iface_close(struct ohc_iface *iface)
{
	struct self_iface *si = self_iface(iface);
	struct self_box *box = si->box;

	if (!box)
		return;
	pthread_mutex_lock(&registry_lock);
	ohc_list_del(&box->reg_link);
	pthread_mutex_unlock(&registry_lock);

	pthread_mutex_lock(&box->lock);
	box->closed = 1;
	for (uint32_t r = 0; r < box->nranks; r++)
		src_fail_locked(&box->src[r], OHC_ERR_REMOTE);
	pthread_mutex_unlock(&box->lock);
	si->box = NULL;
	box_put(box);
}

static ohc_status_t self_iface_address(struct ohc_iface *iface, void *blob,
				       size_t *len_p)
{
	struct self_iface *si = self_iface(iface);
	struct self_blob b = {
		.magic = SELF_BLOB_MAGIC,
		.rank = si->super.rank,
		.pid = si->pid,
		.session = si->session,
		.proc_token = si->proc_token,
		.iface = (uint64_t)(uintptr_t)iface,
	};

	memcpy(blob, &b, sizeof(b));
	*len_p = sizeof(b);
	return OHC_OK;
}

static int self_iface_reachable(struct ohc_iface *iface, const void *blob,
				size_t len)
{
	struct self_iface *si = self_iface(iface);
	struct self_blob b;

	return blob_parse(blob, len, &b) && b.pid == si->pid &&
	       b.proc_token == si->proc_token && b.session == si->session;
}

static ohc_status_t self_ep_init(struct ohc_iface *iface, struct ohc_ep *ep,
				 uint32_t peer, const void *blob, size_t len)
{
	struct self_iface *si = self_iface(iface);
	struct self_ep *sep = self_ep(ep);
	struct self_blob b;

	if (!blob_parse(blob, len, &b) || b.pid != si->pid ||
	    b.proc_token != si->proc_token || b.session != si->session ||
	    b.rank != peer || peer >= si->super.nranks) {
		OHC_ERROR(OHC_SS_INIT,
			  "rank %u: invalid self address for rank %u",
			  si->super.rank, peer);
		return OHC_ERR_INVALID;
	}
	sep->super.iface = iface;
	sep->super.peer = peer;
	sep->peer_iface = (const void *)(uintptr_t)b.iface;
	ohc_list_init(&sep->recvs);
	ohc_list_add_tail(&si->eps, &sep->link);
	return OHC_OK;
}

/* Find the live mailbox of an iface pointer (registry lock held). */
static struct self_box *box_lookup_locked(const void *owner)
{
	struct ohc_list *pos;

	ohc_list_for_each(pos, &box_registry)
	{
		struct self_box *box =
			ohc_container_of(pos, struct self_box, reg_link);

		if (box->owner == owner)
			return box;
	}
	return NULL;
}

static ohc_status_t self_iface_connect(struct ohc_iface *iface,
				       struct ohc_ep **eps, unsigned n,
				       uint64_t deadline)
{
	struct self_iface *si = self_iface(iface);
	ohc_status_t status = OHC_OK;
	unsigned i;

	(void)deadline; /* peers are open already: nothing to wait for */
	pthread_mutex_lock(&registry_lock);
	for (i = 0; i < n; i++) {
		struct self_ep *sep = self_ep(eps[i]);
		struct self_box *box = box_lookup_locked(sep->peer_iface);

		if (eps[i]->iface != iface || sep->connected) {
			OHC_ERROR(OHC_SS_INIT,
				  "rank %u: self ep to rank %u is not a fresh "
				  "ep of this iface",
				  si->super.rank, eps[i]->peer);
			status = OHC_ERR_INVALID;
			break;
		}
		if (!box || box->session != si->session ||
		    box->rank != eps[i]->peer ||
		    box->nranks != si->super.nranks) {
			OHC_ERROR(OHC_SS_INIT,
				  "rank %u: self peer rank %u is not an open "
				  "iface of this communicator",
				  si->super.rank, eps[i]->peer);
			status = OHC_ERR_INVALID;
			break;
		}
		box_get(box);
		sep->peer_box = box;
	}
	if (status < 0) {
		while (i-- > 0) {
			struct self_ep *sep = self_ep(eps[i]);

			box_put(sep->peer_box);
			sep->peer_box = NULL;
		}
	} else {
		for (i = 0; i < n; i++)
			self_ep(eps[i])->connected = 1;
	}
	pthread_mutex_unlock(&registry_lock);
	return status;
}

/*
 * Why the peer stopped: OHC_ERR_DESYNC if it announced (iface_abort) that
 * it failed on a mismatched operation, OHC_ERR_REMOTE for anything else.
 */
static ohc_status_t peer_stop_reason(struct self_ep *sep)
{
	int why = 0;

	if (sep->peer_box) {
		pthread_mutex_lock(&sep->peer_box->lock);
		why = sep->peer_box->aborted;
		pthread_mutex_unlock(&sep->peer_box->lock);
	}
	return why == OHC_ERR_DESYNC ? OHC_ERR_DESYNC : OHC_ERR_REMOTE;
}

static void self_ep_cancel(struct ohc_ep *ep, ohc_status_t status)
{
	struct self_ep *sep = self_ep(ep);
	struct self_iface *si = self_iface(ep->iface);
	struct self_box *box = si->box, *peer = sep->peer_box;

	if (status >= 0)
		status = OHC_ERR_CANCELED;
	fail_list(&sep->recvs, status);
	if (!sep->err)
		sep->err = status;
	if (!peer)
		return;
	/* The peer's sends to us will never be received. */
	pthread_mutex_lock(&box->lock);
	box->src[ep->peer].rx_dead = 1;
	src_fail_locked(&box->src[ep->peer], box->aborted == OHC_ERR_DESYNC
						     ? OHC_ERR_DESYNC
						     : OHC_ERR_REMOTE);
	pthread_mutex_unlock(&box->lock);
	/* Ours to the peer are withdrawn (the peer is done with them). */
	pthread_mutex_lock(&peer->lock);
	peer->src[si->super.rank].tx_dead = 1;
	while (!ohc_list_empty(&peer->src[si->super.rank].sends)) {
		struct ohc_req *s = ohc_list_first(
			&peer->src[si->super.rank].sends, struct ohc_req, link);

		ohc_list_del(&s->link);
		ohc_req_complete(s, status);
	}
	pthread_mutex_unlock(&peer->lock);
	box_ring(peer);
}

static void self_ep_fini(struct ohc_ep *ep)
{
	struct self_ep *sep = self_ep(ep);

	self_ep_cancel(ep, OHC_ERR_CANCELED);
	if (sep->peer_box)
		box_put(sep->peer_box);
	sep->peer_box = NULL;
	sep->connected = 0;
	if (sep->link.next)
		ohc_list_del(&sep->link);
}

static ohc_status_t self_post_check(struct self_ep *sep)
{
	if (OHC_UNLIKELY(!sep->connected)) {
		OHC_ERROR(OHC_SS_INIT,
			  "rank %u: post on an unconnected self ep to rank %u",
			  sep->super.iface->rank, sep->super.peer);
		return OHC_ERR_INVALID;
	}
	return sep->err;
}

static ohc_status_t self_ep_send(struct ohc_ep *ep, struct ohc_req *req)
{
	struct self_ep *sep = self_ep(ep);
	struct self_iface *si = self_iface(ep->iface);
	struct self_box *peer = sep->peer_box;
	ohc_status_t status = self_post_check(sep);
	int refused;

	if (status < 0)
		return status;
	req->done = 0;
	req->tp_priv = si->box;
	pthread_mutex_lock(&peer->lock);
	refused = peer->closed || peer->src[si->super.rank].rx_dead;
	if (!refused)
		ohc_list_add_tail(&peer->src[si->super.rank].sends, &req->link);
	pthread_mutex_unlock(&peer->lock);
	if (refused) {
		if (!sep->dead_logged)
			OHC_ERROR(OHC_SS_INIT,
				  "rank %u: self peer rank %u no longer "
				  "receives from us",
				  si->super.rank, ep->peer);
		sep->dead_logged = 1;
		return peer_stop_reason(sep);
	}
	box_ring(peer);
	return OHC_OK;
}

static ohc_status_t self_ep_recv(struct ohc_ep *ep, struct ohc_req *req)
{
	struct self_ep *sep = self_ep(ep);
	ohc_status_t status = self_post_check(sep);

	if (status < 0)
		return status;
	req->done = 0;
	ohc_list_add_tail(&sep->recvs, &req->link);
	return OHC_OK;
}

/*
 * Match the front receive with the front send from the peer and deliver
 * one slice; returns 1 if something happened, 0 if nothing can.
 */
static int self_pull_one(struct self_ep *sep, struct self_box *box)
{
	struct self_src *src = &box->src[sep->super.peer];
	struct ohc_req *r = ohc_list_first(&sep->recvs, struct ohc_req, link);
	struct ohc_req *s;
	ohc_status_t rst = OHC_INPROGRESS;
	size_t slice;

	pthread_mutex_lock(&box->lock);
	if (ohc_list_empty(&src->sends)) {
		int tx_dead = src->tx_dead;

		pthread_mutex_unlock(&box->lock);
		if (!tx_dead)
			return 0;
		if (!sep->dead_logged)
			OHC_ERROR(OHC_SS_INIT,
				  "rank %u: self peer rank %u canceled its "
				  "sends",
				  sep->super.iface->rank, sep->super.peer);
		sep->dead_logged = 1;
		sep->err = peer_stop_reason(sep);
		fail_list(&sep->recvs, sep->err);
		return 1;
	}
	s = ohc_list_first(&src->sends, struct ohc_req, link);
	if (s->done != r->done) {
		/* Our partial receive's send was withdrawn: stream lost. */
		pthread_mutex_unlock(&box->lock);
		sep->err = OHC_ERR_REMOTE;
		fail_list(&sep->recvs, OHC_ERR_REMOTE);
		return 1;
	}
	if (r->done == 0 &&
	    (memcmp(&r->sig, &s->sig, sizeof(r->sig)) || r->len != s->len)) {
		r->got_sig = s->sig;
		s->got_sig = r->sig;
		send_complete_locked(s, OHC_ERR_DESYNC);
		rst = OHC_ERR_DESYNC;
	} else {
		slice = OHC_MIN(r->len - r->done, (size_t)SELF_SLICE);
		r->path = OHC_PATH_DIRECT; /* straight out of the sender */
		if (slice)
			ohc_req_deliver(r, r->done,
					(const char *)s->sbuf + s->done, slice);
		s->done += slice;
		if (r->done == r->len) {
			send_complete_locked(s, OHC_OK);
			rst = OHC_OK;
		}
	}
	pthread_mutex_unlock(&box->lock);
	if (rst != OHC_INPROGRESS) {
		ohc_list_del(&r->link);
		ohc_req_complete(r, rst);
		box_ring(sep->peer_box); /* the sender may wait for it */
	}
	return 1;
}

static unsigned self_iface_progress(struct ohc_iface *iface)
{
	struct self_iface *si = self_iface(iface);
	uint32_t done =
		atomic_load_explicit(&si->box->tx_done, memory_order_acquire);
	unsigned n = done - si->tx_seen;
	struct ohc_list *pos;

	si->tx_seen = done;
	ohc_list_for_each(pos, &si->eps)
	{
		struct self_ep *sep =
			ohc_container_of(pos, struct self_ep, link);

		while (sep->connected && !sep->err &&
		       !ohc_list_empty(&sep->recvs) &&
		       self_pull_one(sep, si->box))
			n++;
	}
	return n;
}

static int self_ep_ready(struct self_ep *sep, struct self_box *box)
{
	struct self_src *src = &box->src[sep->super.peer];
	int ready;

	if (!sep->connected || sep->err || ohc_list_empty(&sep->recvs))
		return 0;
	pthread_mutex_lock(&box->lock);
	ready = !ohc_list_empty(&src->sends) || src->tx_dead;
	pthread_mutex_unlock(&box->lock);
	return ready;
}

/* About to sleep (mode: how to be woken): whether something is ready. */
static int self_sleep_begin(struct self_iface *si, enum ohc_bell_mode mode)
{
	struct self_box *box = si->box;
	struct ohc_list *pos;
	int ready = 0;

	ohc_bell_arm(&box->bell, mode);
	if (atomic_exchange_explicit(&box->wake_pending, 0,
				     memory_order_acquire) ||
	    atomic_load_explicit(&box->tx_done, memory_order_acquire) !=
		    si->tx_seen)
		ready = 1;
	ohc_list_for_each(pos, &si->eps)
	{
		if (ready)
			break;
		ready = self_ep_ready(
			ohc_container_of(pos, struct self_ep, link), box);
	}
	return ready;
}

static unsigned self_iface_wait_arm(struct ohc_iface *iface,
				    struct pollfd **fds_p)
{
	struct self_iface *si = self_iface(iface);

	si->bell_pfd.fd = si->box->bell_fd;
	si->bell_pfd.events = POLLIN;
	si->bell_pfd.revents = 0;
	*fds_p = &si->bell_pfd;
	return self_sleep_begin(si, OHC_BELL_FD) ? 0 : 1;
}

static void self_iface_wait_disarm(struct ohc_iface *iface)
{
	struct self_box *box = self_iface(iface)->box;

	ohc_bell_disarm(&box->bell, box->bell_fd);
}

static int self_look(void *si)
{
	return self_sleep_begin(si, OHC_BELL_FUTEX);
}

static ohc_status_t self_iface_wait(struct ohc_iface *iface, int timeout_ms)
{
	struct self_iface *si = self_iface(iface);

	ohc_bell_wait(&si->box->bell, timeout_ms, false, self_look, si);
	return OHC_OK;
}

static void self_iface_wake(struct ohc_iface *iface)
{
	struct self_box *box = self_iface(iface)->box;

	atomic_store_explicit(&box->wake_pending, 1, memory_order_release);
	box_ring(box);
}

static void self_iface_abort(struct ohc_iface *iface, ohc_status_t reason)
{
	struct self_iface *si = self_iface(iface);
	struct ohc_list *pos;
	int first;

	if (reason >= 0)
		return;
	pthread_mutex_lock(&si->box->lock);
	first = !si->box->aborted;
	if (first)
		si->box->aborted = reason;
	pthread_mutex_unlock(&si->box->lock);
	if (!first)
		return;
	ohc_list_for_each(pos, &si->eps)
	{
		struct self_ep *sep = ohc_container_of(pos, struct self_ep, link);

		if (sep->peer_box)
			box_ring(sep->peer_box);
	}
}

/*
 * Peers share our process: alive unless the peer closed its iface or
 * announced that its communicator failed.
 */
static ohc_status_t self_ep_check(struct ohc_ep *ep)
{
	struct self_ep *sep = self_ep(ep);
	int closed, aborted;

	if (!sep->peer_box)
		return OHC_OK;
	pthread_mutex_lock(&sep->peer_box->lock);
	closed = sep->peer_box->closed;
	aborted = sep->peer_box->aborted;
	pthread_mutex_unlock(&sep->peer_box->lock);
	if (aborted) {
		if (!sep->dead_logged)
			OHC_ERROR(OHC_SS_COLL,
				  "rank %u: peer rank %u failed its "
				  "communicator (%s)",
				  ep->iface->rank, ep->peer,
				  ohc_status_str(aborted));
		sep->dead_logged = 1;
		return aborted == OHC_ERR_DESYNC ? OHC_ERR_DESYNC
						 : OHC_ERR_REMOTE;
	}
	if (!closed)
		return OHC_OK;
	if (!sep->dead_logged)
		OHC_ERROR(OHC_SS_INIT,
			  "rank %u: self peer rank %u closed its transport",
			  ep->iface->rank, ep->peer);
	sep->dead_logged = 1;
	return OHC_ERR_REMOTE;
}

const struct ohc_transport_ops ohc_self_ops = {
	.size = sizeof(struct ohc_transport_ops),
	.name = "self",
	.caps = OHC_TP_CAP_SAME_PROCESS | OHC_TP_CAP_WAIT | OHC_TP_CAP_WAIT_SET,
	.iface_size = sizeof(struct self_iface),
	.ep_size = sizeof(struct self_ep),
	.iface_open = self_iface_open,
	.iface_close = self_iface_close,
	.iface_address = self_iface_address,
	.iface_reachable = self_iface_reachable,
	.ep_init = self_ep_init,
	.iface_connect = self_iface_connect,
	.ep_fini = self_ep_fini,
	.ep_send = self_ep_send,
	.ep_recv = self_ep_recv,
	.iface_progress = self_iface_progress,
	.iface_wait = self_iface_wait,
	.iface_wait_arm = self_iface_wait_arm,
	.iface_wait_disarm = self_iface_wait_disarm,
	.iface_wake = self_iface_wake,
	.ep_check = self_ep_check,
	.ep_cancel = self_ep_cancel,
	.iface_abort = self_iface_abort,
};
