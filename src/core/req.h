/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_CORE_REQ_H
#define OHC_CORE_REQ_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/list.h"
#include "util/status.h"

/*
 * A message signature. Every message carries the signature of the
 * operation (and step) that sent it; a receiver that expected another one
 * fails its request with OHC_ERR_DESYNC and keeps what it got in
 * req->got_sig, so the executor can name the rank and the field that
 * differ. Plain bytes, 32 bytes, compared with memcmp.
 */
struct ohc_sig {
	uint64_t seq;   /* per-communicator operation sequence number */
	uint64_t count; /* element count as the op defines it */
	uint32_t root;
	uint8_t op;     /* HcclCMDType */
	uint8_t dtype;
	uint8_t redop;
	uint8_t step;   /* algorithm step, mod 256 */
	uint64_t len;   /* message bytes */
};

_Static_assert(sizeof(struct ohc_sig) == 32, "ohc_sig is wire format");

/* What a receive does with each fragment of the incoming message. */
enum ohc_recv_kind {
	OHC_RECV_COPY,      /* dst[off..] = frag */
	OHC_RECV_REDUCE,    /* dst[off..] = dst[off..] OP frag */
	OHC_RECV_REDUCE_TO, /* dst[off..] = src2[off..] OP frag */
};

/* dst[i] = a[i] OP b[i]; dst may alias a or b (see algo/reduce.h). */
typedef void (*ohc_reduce_fn)(void *dst, const void *a, const void *b,
			      size_t count);

/*
 * Exported memory a send reads from (zero-copy, see src/zerocopy): the
 * memfd behind the source bytes, as a number valid in the sender's
 * process, and where the bytes start inside it. id names the export
 * uniquely within the sender's process (a new activation, a new id), so
 * a reader may cache its mapping of the memfd by (peer, id).
 */
struct ohc_mem_desc {
	uint64_t id;
	int32_t fd;
	uint32_t pad;
	uint64_t fd_off;  /* byte offset of the message in the memfd */
	uint64_t fd_size; /* bytes of the memfd */
};

/* How a receive's bytes travelled (set by the transport, for counters). */
enum ohc_path {
	OHC_PATH_STAGED = 0, /* through an intermediate buffer (ring, bounce) */
	OHC_PATH_DIRECT = 1, /* one copy out of the sender (CMA, in-process) */
	OHC_PATH_ZC = 2,     /* one copy through a shared mapping (exported) */
	/* RDMA-written from the sender's exported buffer into the receiving
	 * transport's registered landing buffer, reduced from there into
	 * the destination (dst = dst OP message): no copy on either side */
	OHC_PATH_LANDING = 3,
	OHC_PATH_N
};

/*
 * One send or receive of one whole message on one endpoint. Owned by the
 * caller (the executor) and must stay alive until status leaves
 * OHC_INPROGRESS or the transport canceled it. A transport keeps posted
 * requests of one endpoint and direction in FIFO order (link) and matches
 * the n-th send of a peer with the n-th receive posted for that peer.
 */
struct ohc_req {
	/* set by the poster */
	struct ohc_sig sig;     /* sent with / expected of the message */
	const void *sbuf;       /* send: source bytes */
	void *dst;              /* recv: destination base */
	const void *src2;       /* recv REDUCE_TO: second operand base */
	size_t len;             /* bytes; a receive must match exactly */
	enum ohc_recv_kind kind;
	ohc_reduce_fn reduce;   /* REDUCE/REDUCE_TO */
	unsigned esize;         /* element size for reductions */
	/* send: the source lies in exported memory (NULL: ordinary memory) */
	const struct ohc_mem_desc *smem;
	struct ohc_mem_desc smem_buf; /* storage smem may point to */
	/* set by the transport */
	enum ohc_path path;           /* recv: how the bytes came */
	volatile ohc_status_t status; /* OHC_INPROGRESS until complete */
	size_t done;                  /* bytes sent / delivered so far */
	struct ohc_sig got_sig;       /* on OHC_ERR_DESYNC: what arrived */
	struct ohc_list link;         /* transport-private queue link */
	void *tp_priv;                /* transport-private */
};

/*
 * Hand one fragment of a receive to its consumer: copy or reduce into the
 * destination at byte offset off. Fragments arrive in order and, except
 * the last, are multiples of 64 bytes, so reductions see whole elements.
 * Called by transports only.
 */
static inline void ohc_req_deliver(struct ohc_req *req, size_t off,
				   const void *frag, size_t len)
{
	char *d = (char *)req->dst + off;

	switch (req->kind) {
	case OHC_RECV_COPY:
		memcpy(d, frag, len);
		break;
	case OHC_RECV_REDUCE:
		req->reduce(d, d, frag, len / req->esize);
		break;
	case OHC_RECV_REDUCE_TO:
		req->reduce(d, (const char *)req->src2 + off, frag,
			    len / req->esize);
		break;
	}
	req->done += len;
}

/* Complete a request; the transport has dropped it from its queues. */
static inline void ohc_req_complete(struct ohc_req *req, ohc_status_t status)
{
	__atomic_store_n(&req->status, status, __ATOMIC_RELEASE);
}

#endif
