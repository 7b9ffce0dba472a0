/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The transports' address blobs, which every rank receives from every
 * peer through the bootstrap: iface_reachable and ep_init of self, shm
 * and verbs on arbitrary bytes (and, for self, iface_connect, which looks
 * the blob's iface pointer up). self runs on real ifaces; shm and verbs
 * on ifaces filled in here as iface_open would (no segment, no RDMA
 * device: ep_init only reads the blob and the iface's own fields).
 *
 * Input: transport, the peer the blob is for, a mode (the bytes as the
 * blob, or XORed onto the peer's real blob), a length change, the bytes.
 */
#include <arpa/inet.h>
#include <unistd.h>

#include "transport/process.h"
#include "transport/shm/shm.h"
#include "transport/verbs/verbs.h"
#include "transport/transport.h"
#include "fuzz.h"

#define NRANKS 3
#define SESSION 0x5e5510c0ffee0001ull

static const struct ohc_transport_ops *ops[3];
static struct ohc_iface *self_if[2];
static struct ohc_shm_iface *shm_if[2];
static struct ohc_verbs_iface *vx_if[2];
static struct ohc_verbs_ep *vx_by_peer[2][NRANKS];
static uint8_t tmpl[3][OHC_ADDR_MAX]; /* rank 1's blob per transport */
static size_t tmpl_len[3];

static void *zalloc(size_t n)
{
	void *p = calloc(1, n);

	if (!p)
		abort();
	return p;
}

static void make_shm(unsigned k)
{
	struct ohc_shm_iface *s = zalloc(ops[1]->iface_size);
	const char *hostid = "fuzzhost:0123456789abcdef";

	s->super.ops = ops[1];
	s->super.rank = k;
	s->super.nranks = NRANKS;
	s->session = SESSION;
	s->pid = getpid() + (pid_t)k; /* two processes */
	s->proc_token = ohc_process_token() + k;
	s->hostid_len = (uint32_t)strlen(hostid);
	memcpy(s->hostid, hostid, s->hostid_len);
	s->hostid_hash = 0x1234;
	s->listen_fd = s->seg_fd = -1;
	ohc_list_init(&s->eps);
	shm_if[k] = s;
}

static void make_verbs(unsigned k)
{
	struct ohc_verbs_iface *v = zalloc(ops[2]->iface_size);
	struct sockaddr_in *a = (struct sockaddr_in *)&v->listen_addr;

	v->super.ops = ops[2];
	v->super.rank = k;
	v->super.nranks = NRANKS;
	v->session = SESSION;
	v->nqps = 2;
	v->slots = 32;
	v->slot_bytes = 65536 + OHC_VX_HDR;
	v->rndv_bytes = 256 << 10;
	v->listen_fd = -1;
	a->sin_family = AF_INET;
	a->sin_port = htons(50000 + k);
	a->sin_addr.s_addr = htonl(0x7f000001);
	v->by_peer = vx_by_peer[k];
	vx_if[k] = v;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct ohc_transport_params p = {
		.nranks = NRANKS, .session = SESSION, .hostid = "h"};

	(void)argc;
	(void)argv;
	fz_quiet();
	ops[0] = ohc_transport_get("self");
	ops[1] = ohc_transport_get("shm");
	ops[2] = ohc_transport_get("verbs");
	FZ_ASSERT(ops[0] && ops[1] && ops[2]);
	for (unsigned k = 0; k < 2; k++) {
		p.rank = k;
		self_if[k] = zalloc(ops[0]->iface_size);
		self_if[k]->ops = ops[0];
		FZ_ASSERT(ops[0]->iface_open(self_if[k], &p) == OHC_OK);
		make_shm(k);
		make_verbs(k);
	}
	FZ_ASSERT(ops[0]->iface_address(self_if[1], tmpl[0], &tmpl_len[0]) ==
		  OHC_OK);
	FZ_ASSERT(ops[1]->iface_address(&shm_if[1]->super, tmpl[1],
					&tmpl_len[1]) == OHC_OK);
	FZ_ASSERT(ops[2]->iface_address(&vx_if[1]->super, tmpl[2],
					&tmpl_len[2]) == OHC_OK);
	return 0;
}

static void try_self(const uint8_t *blob, size_t len, uint32_t peer)
{
	const struct ohc_transport_ops *o = ops[0];
	struct ohc_ep *ep = zalloc(o->ep_size);
	int reach = o->iface_reachable(self_if[0], blob, len);

	if (o->ep_init(self_if[0], ep, peer, blob, len) == OHC_OK) {
		FZ_ASSERT(reach && peer < NRANKS);
		/* the pointer inside is only looked up: a connect to anything
		 * but a live iface of that rank must fail. Ranks 0 and 1 have
		 * one: a blob naming rank 0 with rank 0's own iface (two bit
		 * flips from rank 1's template, the ifaces being allocated
		 * next to each other; CI found one) is our address to
		 * ourselves, which a rank does connect to */
		if (o->iface_connect(self_if[0], &ep, 1, 0) == OHC_OK)
			FZ_ASSERT(peer == 1 || peer == 0);
		o->ep_fini(ep);
	}
	free(ep);
}

static void try_shm(const uint8_t *blob, size_t len, uint32_t peer)
{
	const struct ohc_transport_ops *o = ops[1];
	struct ohc_ep *ep = zalloc(o->ep_size);

	(void)o->iface_reachable(&shm_if[0]->super, blob, len);
	if (o->ep_init(&shm_if[0]->super, ep, peer, blob, len) == OHC_OK) {
		FZ_ASSERT(peer < NRANKS && peer != 0);
		FZ_ASSERT(len <= OHC_ADDR_MAX);
		o->ep_fini(ep);
	}
	free(ep);
}

static void try_verbs(const uint8_t *blob, size_t len, uint32_t peer)
{
	const struct ohc_transport_ops *o = ops[2];
	struct ohc_verbs_ep *e = zalloc(o->ep_size);
	struct ohc_verbs_iface *v = vx_if[0];
	int reach = o->iface_reachable(&v->super, blob, len);

	if (o->ep_init(&v->super, &e->super, peer, blob, len) == OHC_OK) {
		FZ_ASSERT(reach && peer < NRANKS && v->by_peer[peer] == e);
		FZ_ASSERT(e->peer_blob.rank == peer &&
			  e->peer_blob.session == v->session);
		FZ_ASSERT(e->peer_blob.nqps == v->nqps &&
			  e->peer_blob.slots == v->slots &&
			  e->peer_blob.slot_bytes == v->slot_bytes &&
			  e->peer_blob.rndv_bytes == v->rndv_bytes);
		v->by_peer[peer] = NULL;
	}
	free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = fz_init(data, size);
	unsigned tp = fz_u8(&f) % 3;
	uint32_t peer = fz_u8(&f) % (NRANKS + 1);
	uint8_t mode = fz_u8(&f);
	int8_t delta = (int8_t)fz_u8(&f);
	size_t len, got;
	const uint8_t *p;
	uint8_t *blob;

	if (mode & 1) {
		long l = (long)tmpl_len[tp] + (mode & 2 ? delta : 0);

		len = l < 0 ? 0 : (size_t)l;
	} else {
		len = f.n;
	}
	if (len > OHC_ADDR_MAX + 64)
		len = OHC_ADDR_MAX + 64;
	/* exactly len bytes: ASan sees a read past the blob */
	blob = zalloc(len ? len : 1);
	p = fz_take(&f, len, &got);
	if (mode & 1) {
		memcpy(blob, tmpl[tp], OHC_MIN(len, tmpl_len[tp]));
		for (size_t i = 0; i < got; i++)
			blob[i] ^= p[i];
	} else {
		memcpy(blob, p, got);
	}
	if (tp == 0)
		try_self(blob, len, peer);
	else if (tp == 1)
		try_shm(blob, len, peer);
	else
		try_verbs(blob, len, peer);
	free(blob);
	return 0;
}
