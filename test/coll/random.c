/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Randomized differential test of every collective through the public API.
 *
 * From (seed, case index, rank count) every rank derives the same case: one
 * to three operations (AllReduce, Broadcast, Reduce, AllGather[V],
 * ReduceScatter[V], Scatter, AlltoAll[V|VC], BatchSendRecv, grouped
 * Send/Recv, Barrier) with their dtype, reduce op, count, root, in-place
 * layout and V counts, run bare or inside (nested) HcclGroupStart/End.
 * Each rank picks a real stream or the NULL (synchronous) stream per case.
 * Inputs are pure functions of (seed, case, rank, index), so every rank
 * computes the exact expected output locally and compares it byte for
 * byte, including untouched gaps, guard bytes past every buffer and input
 * buffers that must stay unchanged.
 *
 * The seed is printed at start; OHC_TEST_SEED=<seed> replays it,
 * OHC_TEST_CASE=<i> runs only case i, OHC_TEST_CASES=<n> changes the
 * number of cases, OHC_TEST_VERBOSE=1 lists them. A mismatch prints seed, case, rank and the case.
 *
 * Sub-communicator runs (*_sub tests): the world ranks are dealt, from
 * the seed, into one or two groups (a few may stay outside and call
 * HcclCreateSubCommConfig as non-members); every group makes one
 * sub-communicator per algorithm setting with HcclCreateSubCommConfig
 * (the odd settings split from the group's first sub-communicator: a
 * split of a split) and runs the random cases on them, bare or in
 * groups, while the other group runs its own. The world is destroyed
 * before its sub-communicators, the nested ones after their parents.
 *
 * Two hosts (two_vms, only inside `ci/soft-roce/run-vm.sh --vms 2`): two
 * ranks per VM from one rank table, shm inside a VM and verbs across the
 * wire; both VMs need the same OHC_TEST_SEED (vm-suites.sh passes one).
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "helpers/ohc_test.h"

#define MAX_RANKS 8
#define MAX_SUB 3
#define MAX_MSGS (2 * MAX_RANKS * MAX_RANKS)
#define GUARD 64
#define GUARD_BYTE 0xa5
#define JUNK_BYTE 0xee
#define LARGE ((uint64_t)1 << 18)

enum rop {
	OP_ALLREDUCE,
	OP_BROADCAST,
	OP_REDUCE,
	OP_ALLGATHER,
	OP_ALLGATHERV,
	OP_REDUCE_SCATTER,
	OP_REDUCE_SCATTERV,
	OP_SCATTER,
	OP_ALLTOALL,
	OP_ALLTOALLV,
	OP_ALLTOALLVC,
	OP_BATCH,
	OP_GROUP_P2P,
	OP_BARRIER,
	OP_COUNT
};

static const struct {
	const char *name;
	bool reduce;	/* takes a (dtype, reduce op) pair */
	bool rooted;
	int inplace;	/* number of in-place layouts the spec allows */
	bool scaled;	/* buffers hold count x nranks elements */
} ops[OP_COUNT] = {
	[OP_ALLREDUCE] = {"AllReduce", true, false, 1, false},
	[OP_BROADCAST] = {"Broadcast", false, true, 0, false},
	[OP_REDUCE] = {"Reduce", true, true, 1, false},
	[OP_ALLGATHER] = {"AllGather", false, false, 1, true},
	[OP_ALLGATHERV] = {"AllGatherV", false, false, 0, false},
	[OP_REDUCE_SCATTER] = {"ReduceScatter", true, false, 2, true},
	[OP_REDUCE_SCATTERV] = {"ReduceScatterV", true, false, 0, false},
	[OP_SCATTER] = {"Scatter", false, true, 0, true},
	[OP_ALLTOALL] = {"AlltoAll", false, false, 0, true},
	[OP_ALLTOALLV] = {"AlltoAllV", false, false, 0, false},
	[OP_ALLTOALLVC] = {"AlltoAllVC", false, false, 0, false},
	[OP_BATCH] = {"BatchSendRecv", false, false, 0, false},
	[OP_GROUP_P2P] = {"GroupSendRecv", false, false, 0, false},
	[OP_BARRIER] = {"Barrier", false, false, 0, false},
};

/* Every type a non-reducing operation accepts (all valid but int128). */
static const HcclDataType plain_types[] = {
	HCCL_DATA_TYPE_INT8,    HCCL_DATA_TYPE_INT16,   HCCL_DATA_TYPE_INT32,
	HCCL_DATA_TYPE_FP16,    HCCL_DATA_TYPE_FP32,    HCCL_DATA_TYPE_INT64,
	HCCL_DATA_TYPE_UINT64,  HCCL_DATA_TYPE_UINT8,   HCCL_DATA_TYPE_UINT16,
	HCCL_DATA_TYPE_UINT32,  HCCL_DATA_TYPE_FP64,    HCCL_DATA_TYPE_BFP16,
	HCCL_DATA_TYPE_HIF8,    HCCL_DATA_TYPE_FP8E4M3, HCCL_DATA_TYPE_FP8E5M2,
	HCCL_DATA_TYPE_FP8E8M0,
};
#define NPLAIN (sizeof(plain_types) / sizeof(plain_types[0]))

static const char *redop_name(HcclReduceOp op)
{
	static const char *names[] = {"sum", "prod", "max", "min"};

	return (unsigned)op < 4 ? names[op] : "?";
}

/* ---- deterministic randomness -------------------------------------- */

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

struct rng {
	uint64_t s;
};

/* Keys of the independent random streams of one case. */
enum {
	KEY_CASE = 1,
	KEY_VCOUNTS,	/* | sub: counts shared by all ranks */
	KEY_LAYOUT,	/* | sub | tag | rank: displacements */
	KEY_MATRIX,	/* | sub: AlltoAllV[C] count matrix */
	KEY_MSGS,	/* | sub: point-to-point messages */
	KEY_ORDER,	/* | sub | rank: item order of one rank */
	KEY_STREAM,	/* | rank: NULL stream or not */
	KEY_NULLS,	/* | sub | rank: NULL buffers where allowed */
	KEY_COMM,	/* which communicator */
	KEY_SPLIT,	/* how the world splits (sub-communicator runs) */
};

/*
 * The communicators of a process run, one per algorithm setting (config
 * field hcclAlgo, same grammar as HCCL_ALGO), so every algorithm serves
 * random calls; the first is the automatic choice. Thread runs use the
 * HcclCommInitAll communicator for the first, root-info communicators
 * made by the threads for the others.
 */
static const struct comm_kind {
	const char *algo;
	uint32_t deterministic;
} comm_kinds[] = {
	{NULL, 0},
	{"level0:NA;level1:ring", 0},	  /* ring family, bcast scatter+ag */
	{"level0:NA;level1:H-D_R", 1},	  /* halving/doubling, binomial */
	{"level0:NA;level1:NB", 0},	  /* bruck allgather and alltoall */
	{"level0:NA;level1:pipeline", 1}, /* linear scatter */
	{"allreduce=level0:NA;level1:recursive_doubling/"
	 "alltoall=level0:NA;level1:pairwise",
	 0},
};
#define NKINDS (sizeof(comm_kinds) / sizeof(comm_kinds[0]))

static struct rng rng_at(uint64_t seed, uint32_t index, int nranks,
			 uint64_t key, int sub, int tag, int rank)
{
	uint64_t k = key << 32 | (uint64_t)sub << 16 | (uint64_t)tag << 8 |
		     (uint64_t)rank;

	return (struct rng){mix64(seed ^ mix64(((uint64_t)index << 8 |
						  (uint64_t)nranks) ^
						 mix64(k)))};
}

static uint64_t rng_next(struct rng *r)
{
	return mix64(r->s++);
}

static uint64_t below(struct rng *r, uint64_t n)
{
	return rng_next(r) % n;
}

static void shuffle(struct rng *r, int *a, int n)
{
	for (int i = n - 1; i > 0; i--) {
		int j = (int)below(r, (uint64_t)i + 1), t = a[i];

		a[i] = a[j];
		a[j] = t;
	}
}

/* One byte of the data rank src sends to rank dst (plain operations). */
static unsigned char pat_byte(uint64_t salt, int src, int dst, size_t i)
{
	uint64_t h = salt ^ (uint64_t)src * 0x100000001b3ull ^
		     (uint64_t)dst * 0xc2b2ae3d27d4eb4full;

	h += (uint64_t)i * 0x9e3779b97f4a7c15ull;
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return (unsigned char)(h >> 56);
}

static void pat_fill(unsigned char *b, size_t bytes, uint64_t salt, int src,
		     int dst, size_t first)
{
	for (size_t i = 0; i < bytes; i++)
		b[i] = pat_byte(salt, src, dst, first + i);
}

/* ---- case generation ---------------------------------------------- */

struct sub {
	enum rop op;
	HcclDataType dtype;
	HcclReduceOp redop;
	uint64_t count;
	uint32_t root;
	int inplace;	/* 0 out of place, else the layout (see prepare) */
	int p2p_order;	/* GroupSendRecv: 0 all sends first, 1 mixed */
	uint64_t salt;
};

struct rcase {
	uint64_t seed;
	uint32_t index;
	int nranks;
	int comm;	/* which communicator (comm_kinds) */
	int group;	/* 0 bare, else the nesting depth of the group */
	int nsub;
	struct sub sub[MAX_SUB];
};

static uint64_t pick_count(struct rng *r, uint64_t large)
{
	switch (below(r, 11)) {
	case 0:
		return 0;
	case 1:
	case 2:
		return 1;
	case 3:
	case 4:
		return 7;
	case 5:
	case 6:
		return 33;
	case 7:
	case 8:
	case 9:
		return 1001 + 2 * below(r, 500);
	default:
		return large + 1 + 2 * below(r, 64);
	}
}

/* Counts inside V operations and messages: zeros are common. */
static uint64_t pick_vcount(struct rng *r)
{
	switch (below(r, 12)) {
	case 0:
	case 1:
	case 2:
		return 0;
	case 3:
	case 4:
		return 1;
	case 5:
	case 6:
		return 7;
	case 7:
	case 8:
		return 33;
	case 9:
	case 10:
		return 1001 + 2 * below(r, 500);
	default:
		return 20000 + 1 + 2 * below(r, 4000);
	}
}

static HcclDataType pick_plain(struct rng *r)
{
	return plain_types[below(r, NPLAIN)];
}

static void gen_sub(struct rng *r, int nranks, enum rop op, struct sub *s)
{
	memset(s, 0, sizeof(*s));
	s->op = op;
	if (ops[op].reduce) {
		size_t p = below(r, ohc_test_nreduce_pairs);

		s->dtype = ohc_test_reduce_pairs[p].dtype;
		s->redop = ohc_test_reduce_pairs[p].op;
	} else {
		s->dtype = pick_plain(r);
	}
	/* keep the large case near LARGE elements in total */
	s->count = pick_count(r, ops[op].scaled ? LARGE / nranks : LARGE);
	s->root = (uint32_t)below(r, nranks);
	if (ops[op].inplace && below(r, 2))
		s->inplace = 1 + (int)below(r, ops[op].inplace);
	s->p2p_order = (int)below(r, 2);
	s->salt = rng_next(r);
}

static void gen_case(uint64_t seed, uint32_t index, int nranks, int ncomms,
		     struct rcase *c)
{
	struct rng r = rng_at(seed, index, nranks, KEY_CASE, 0, 0, 0);
	struct rng cr = rng_at(seed, index, nranks, KEY_COMM, 0, 0, 0);
	enum rop first = (enum rop)below(&r, OP_COUNT);

	memset(c, 0, sizeof(*c));
	c->seed = seed;
	c->index = index;
	c->nranks = nranks;
	c->comm = (int)below(&cr, (uint64_t)ncomms);
	c->nsub = 1;
	if (first == OP_GROUP_P2P) {
		c->group = 1 + (int)below(&r, 2);
	} else if (first != OP_BATCH) {
		/* batch send/recv may not be inside a group (spec 2.6) */
		if (below(&r, 3) == 0)
			c->group = 1 + (int)below(&r, 2);
		if (below(&r, 4) == 0)
			c->nsub = 2 + (int)below(&r, MAX_SUB - 1);
	}
	gen_sub(&r, nranks, first, &c->sub[0]);
	for (int k = 1; k < c->nsub; k++) {
		enum rop op;

		do
			op = (enum rop)below(&r, OP_COUNT);
		while (op == OP_BATCH || op == OP_GROUP_P2P);
		gen_sub(&r, nranks, op, &c->sub[k]);
	}
}

static bool uses_stream(const struct rcase *c, int rank)
{
	struct rng r = rng_at(c->seed, c->index, c->nranks, KEY_STREAM, 0, 0,
			      rank);

	return below(&r, 3) != 0;
}

static void describe(const struct rcase *c, int rank, char *out, size_t len)
{
	size_t n = 0;

	n += snprintf(out + n, len - n, "comm %d (algo %s), ", c->comm,
		      comm_kinds[c->comm].algo ? comm_kinds[c->comm].algo
					       : "auto");
	if (c->group)
		n += snprintf(out + n, len - n, "group depth %d", c->group);
	else
		n += snprintf(out + n, len - n, "no group");
	n += snprintf(out + n, len - n, ", %s stream, %d op(s)",
		      uses_stream(c, rank) ? "real" : "NULL", c->nsub);
	for (int k = 0; k < c->nsub && n < len; k++) {
		const struct sub *s = &c->sub[k];

		n += snprintf(out + n, len - n, "; [%d] %s %s", k,
			      ops[s->op].name, ohc_test_dtype_name(s->dtype));
		if (n >= len)
			break;
		if (ops[s->op].reduce)
			n += snprintf(out + n, len - n, " %s",
				      redop_name(s->redop));
		if (n < len && s->op != OP_BARRIER && s->op != OP_BATCH &&
		    s->op != OP_GROUP_P2P && s->op != OP_ALLGATHERV &&
		    s->op != OP_REDUCE_SCATTERV && s->op != OP_ALLTOALLV &&
		    s->op != OP_ALLTOALLVC)
			n += snprintf(out + n, len - n, " count %llu",
				      (unsigned long long)s->count);
		if (n < len && ops[s->op].rooted)
			n += snprintf(out + n, len - n, " root %u", s->root);
		if (n < len && s->inplace)
			n += snprintf(out + n, len - n, " in place (layout %d)",
				      s->inplace);
		if (n < len && s->op == OP_GROUP_P2P)
			n += snprintf(out + n, len - n, " %s",
				      s->p2p_order ? "mixed order"
						   : "all sends first");
	}
}

/*
 * Cases the library is known to get wrong; they are skipped (and counted)
 * until src/ is fixed. Each entry says what fails and how to reproduce it.
 */
static const char *known_failing(const struct rcase *c)
{
	(void)c;
	return NULL;
}

/* ---- per-rank execution -------------------------------------------- */

struct buf {
	unsigned char *p;
	size_t bytes;
};

static bool buf_alloc(struct buf *b, size_t bytes)
{
	b->p = malloc(bytes + GUARD);
	b->bytes = bytes;
	if (!b->p)
		return false;
	memset(b->p, JUNK_BYTE, bytes);
	memset(b->p + bytes, GUARD_BYTE, GUARD);
	return true;
}

static bool buf_dup(struct buf *dst, const struct buf *src)
{
	if (!buf_alloc(dst, src->bytes))
		return false;
	memcpy(dst->p, src->p, src->bytes);
	return true;
}

static void buf_free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
}

struct msg {
	int src, dst;
	HcclDataType dtype;
	uint64_t count;
};

struct subrun {
	const struct sub *s;
	struct buf send, recv, want, sref;
	struct buf *out;	/* allocation holding the result */
	size_t woff, wlen;	/* bytes of out checked against want */
	void *sptr, *rptr;	/* as passed: may alias each other, or NULL */
	bool check_out;
	uint64_t v[4][MAX_RANKS];
	uint64_t m[MAX_RANKS * MAX_RANKS];
	struct msg msgs[MAX_MSGS];
	int nmsgs;
	HcclSendRecvItem items[MAX_MSGS * 2];
	uint32_t nitems;
};

struct ctx {
	const struct rcase *c;
	int rank;
	const char *mode;
	int bad;
};

static void report(struct ctx *x, int k, const char *fmt, ...)
{
	char desc[1024], what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	describe(x->c, x->rank, desc, sizeof(desc));
	fprintf(stderr,
		"random[%s]: MISMATCH seed %llu case %u rank %d of %d: "
		"op [%d]: %s\n    case: %s\n",
		x->mode, (unsigned long long)x->c->seed, x->c->index, x->rank,
		x->c->nranks, k, what, desc);
	x->bad++;
}

/* Random disjoint placement of n blocks: shuffled order, random gaps. */
static uint64_t layout(struct rng *r, int n, const uint64_t *counts,
		       uint64_t *displs)
{
	int order[MAX_RANKS];
	uint64_t at = 0;

	for (int i = 0; i < n; i++)
		order[i] = i;
	shuffle(r, order, n);
	for (int i = 0; i < n; i++) {
		if (below(r, 3) == 0)
			at += below(r, 9);
		displs[order[i]] = at;
		at += counts[order[i]];
	}
	if (below(r, 2))
		at += below(r, 5);
	return at;
}

static void gen_msgs(const struct rcase *c, int k, bool self,
		     struct subrun *s)
{
	struct rng r = rng_at(c->seed, c->index, c->nranks, KEY_MSGS, k, 0, 0);
	bool dense = below(&r, 2);

	s->nmsgs = 0;
	for (int src = 0; src < c->nranks; src++) {
		for (int dst = 0; dst < c->nranks; dst++) {
			int nm = dense ? 1 + (int)below(&r, 2)
				       : (int)below(&r, 3);

			if (src == dst && !self)
				continue;
			for (int i = 0; i < nm; i++) {
				struct msg *m = &s->msgs[s->nmsgs++];

				m->src = src;
				m->dst = dst;
				m->dtype = pick_plain(&r);
				m->count = pick_vcount(&r);
			}
		}
	}
}

static uint64_t msg_salt(const struct sub *sb, int m)
{
	return sb->salt + (uint64_t)m * 0x100000001b3ull;
}

/*
 * Items of one rank for the messages: its sends and receives in a random
 * order that keeps, per (peer, direction), the message order, because
 * messages of one pair match first to first.
 */
static bool build_items(const struct rcase *c, int k, int me,
			struct subrun *s)
{
	struct rng r = rng_at(c->seed, c->index, c->nranks, KEY_ORDER, k, 0,
			      me);
	struct rng nr = rng_at(c->seed, c->index, c->nranks, KEY_NULLS, k, 0,
			       me);
	int keys[MAX_MSGS * 2], cursor[2][MAX_RANKS];
	int mine[MAX_MSGS * 2];
	size_t soff = 0, roff = 0, off[MAX_MSGS * 2];
	int n = 0;

	for (int m = 0; m < s->nmsgs; m++) {
		if (s->msgs[m].src == me)
			keys[n++] = 0 << 8 | s->msgs[m].dst;
		if (s->msgs[m].dst == me)
			keys[n++] = 1 << 8 | s->msgs[m].src;
	}
	shuffle(&r, keys, n);
	if (s->s->op == OP_GROUP_P2P && s->s->p2p_order == 0) {
		/* every send before any receive: deadlocks unless grouped */
		int t[MAX_MSGS * 2], j = 0;

		for (int i = 0; i < n; i++)
			if (!(keys[i] >> 8))
				t[j++] = keys[i];
		for (int i = 0; i < n; i++)
			if (keys[i] >> 8)
				t[j++] = keys[i];
		memcpy(keys, t, sizeof(int) * n);
	}
	memset(cursor, 0, sizeof(cursor));
	for (int i = 0; i < n; i++) {
		int dir = keys[i] >> 8, peer = keys[i] & 0xff, m;
		const struct msg *g = NULL;
		size_t es, *at = dir ? &roff : &soff;

		for (m = cursor[dir][peer]; m < s->nmsgs; m++) {
			g = &s->msgs[m];
			if (dir ? g->dst == me && g->src == peer
				: g->src == me && g->dst == peer)
				break;
		}
		if (!g || m == s->nmsgs)
			return false; /* cannot happen: keys come from msgs */
		cursor[dir][peer] = m + 1;
		mine[i] = m;
		es = ohc_test_dtype_size(g->dtype);
		off[i] = *at;
		*at += (g->count * es + 15) & ~(size_t)15;
	}
	if (!buf_alloc(&s->send, soff) || !buf_alloc(&s->recv, roff) ||
	    !buf_alloc(&s->want, roff))
		return false;
	for (int i = 0; i < n; i++) {
		const struct msg *g = &s->msgs[mine[i]];
		HcclSendRecvItem *it = &s->items[i];
		size_t bytes = g->count * ohc_test_dtype_size(g->dtype);
		bool recv = keys[i] >> 8;

		it->sendRecvType = recv ? HCCL_RECV : HCCL_SEND;
		it->count = g->count;
		it->dataType = g->dtype;
		it->remoteRank = (uint32_t)(recv ? g->src : g->dst);
		it->buf = (recv ? s->recv.p : s->send.p) + off[i];
		if (recv)
			pat_fill(s->want.p + off[i], bytes,
				 msg_salt(s->s, mine[i]), g->src, g->dst, 0);
		else
			pat_fill(it->buf, bytes, msg_salt(s->s, mine[i]),
				 g->src, g->dst, 0);
		if (g->count == 0 && below(&nr, 2))
			it->buf = NULL;
	}
	s->nitems = (uint32_t)n;
	s->out = &s->recv;
	s->woff = 0;
	s->wlen = roff;
	s->check_out = true;
	return buf_dup(&s->sref, &s->send);
}

/* Reduction inputs of rank me over count elements of b. */
static void fill_red(const struct sub *sb, struct buf *b, int me,
		     uint64_t count)
{
	ohc_test_fill(b->p, sb->dtype, sb->redop, me, count, sb->salt);
}

/* Allocate and fill buffers, compute the expected result. */
static bool prepare(const struct rcase *c, int k, int me, struct subrun *s)
{
	const struct sub *sb = &c->sub[k];
	int n = c->nranks;
	size_t es = ohc_test_dtype_size(sb->dtype), cnt = sb->count;
	struct rng nr = rng_at(c->seed, c->index, n, KEY_NULLS, k, 1, me);
	uint64_t *cs = s->v[0], *ds = s->v[1], *rc = s->v[2], *rd = s->v[3];
	uint64_t ext, sext = 0, rext = 0;
	bool ok = true;

	s->s = sb;
	s->check_out = true;
	switch (sb->op) {
	case OP_ALLREDUCE:
	case OP_REDUCE:
		ok = buf_alloc(&s->send, cnt * es);
		if (!ok)
			break;
		fill_red(sb, &s->send, me, cnt);
		if (sb->inplace) {
			s->out = &s->send;
		} else {
			ok = buf_alloc(&s->recv, cnt * es) &&
			     buf_dup(&s->sref, &s->send);
			s->out = &s->recv;
		}
		ok = ok && buf_alloc(&s->want, cnt * es);
		if (!ok)
			break;
		ohc_test_expect(s->want.p, sb->dtype, sb->redop, n, cnt,
				sb->salt);
		s->wlen = cnt * es;
		s->check_out = sb->op == OP_ALLREDUCE || me == (int)sb->root;
		break;
	case OP_BROADCAST:
		ok = buf_alloc(&s->recv, cnt * es) &&
		     buf_alloc(&s->want, cnt * es);
		if (!ok)
			break;
		if (me == (int)sb->root)
			pat_fill(s->recv.p, cnt * es, sb->salt, sb->root, 0, 0);
		pat_fill(s->want.p, cnt * es, sb->salt, sb->root, 0, 0);
		s->out = &s->recv;
		s->wlen = cnt * es;
		break;
	case OP_ALLGATHER:
		ok = buf_alloc(&s->recv, n * cnt * es) &&
		     buf_alloc(&s->want, n * cnt * es);
		if (!ok)
			break;
		for (int r = 0; r < n; r++)
			pat_fill(s->want.p + r * cnt * es, cnt * es, sb->salt,
				 r, 0, 0);
		if (sb->inplace) {
			/* own block already in place: send aliases it */
			pat_fill(s->recv.p + me * cnt * es, cnt * es, sb->salt,
				 me, 0, 0);
		} else {
			ok = buf_alloc(&s->send, cnt * es);
			if (!ok)
				break;
			pat_fill(s->send.p, cnt * es, sb->salt, me, 0, 0);
			ok = buf_dup(&s->sref, &s->send);
		}
		s->out = &s->recv;
		s->wlen = n * cnt * es;
		break;
	case OP_ALLGATHERV: {
		struct rng vr = rng_at(c->seed, c->index, n, KEY_VCOUNTS, k, 0,
				       0);
		struct rng lr = rng_at(c->seed, c->index, n, KEY_LAYOUT, k, 0,
				       0);

		for (int r = 0; r < n; r++)
			cs[r] = pick_vcount(&vr);
		ext = layout(&lr, n, cs, ds);
		ok = buf_alloc(&s->recv, ext * es) &&
		     buf_alloc(&s->want, ext * es) &&
		     buf_alloc(&s->send, cs[me] * es);
		if (!ok)
			break;
		for (int r = 0; r < n; r++)
			pat_fill(s->want.p + ds[r] * es, cs[r] * es, sb->salt,
				 r, 0, 0);
		pat_fill(s->send.p, cs[me] * es, sb->salt, me, 0, 0);
		ok = buf_dup(&s->sref, &s->send);
		s->out = &s->recv;
		s->wlen = ext * es;
		break;
	}
	case OP_REDUCE_SCATTER:
		ok = buf_alloc(&s->send, n * cnt * es) &&
		     buf_alloc(&s->want, n * cnt * es);
		if (!ok)
			break;
		fill_red(sb, &s->send, me, n * cnt);
		/* layout 1: recvBuf == sendBuf, 2: recvBuf = own block */
		s->woff = sb->inplace == 2 ? me * cnt * es : 0;
		if (sb->inplace) {
			s->out = &s->send;
		} else {
			ok = buf_alloc(&s->recv, cnt * es) &&
			     buf_dup(&s->sref, &s->send);
			s->out = &s->recv;
		}
		if (!ok)
			break;
		ohc_test_expect_at(s->want.p + s->woff, sb->dtype, sb->redop,
				   n, me * cnt, cnt, sb->salt);
		s->wlen = cnt * es;
		break;
	case OP_REDUCE_SCATTERV: {
		struct rng vr = rng_at(c->seed, c->index, n, KEY_VCOUNTS, k, 0,
				       0);
		struct rng lr = rng_at(c->seed, c->index, n, KEY_LAYOUT, k, 0,
				       0);

		for (int r = 0; r < n; r++)
			cs[r] = pick_vcount(&vr);
		ext = layout(&lr, n, cs, ds);
		ok = buf_alloc(&s->send, ext * es) &&
		     buf_alloc(&s->recv, cs[me] * es) &&
		     buf_alloc(&s->want, cs[me] * es);
		if (!ok)
			break;
		fill_red(sb, &s->send, me, ext);
		ohc_test_expect_at(s->want.p, sb->dtype, sb->redop, n, ds[me],
				   cs[me], sb->salt);
		ok = buf_dup(&s->sref, &s->send);
		s->out = &s->recv;
		s->wlen = cs[me] * es;
		break;
	}
	case OP_SCATTER:
		ok = buf_alloc(&s->send, n * cnt * es) &&
		     buf_alloc(&s->recv, cnt * es) &&
		     buf_alloc(&s->want, cnt * es);
		if (!ok)
			break;
		if (me == (int)sb->root)
			pat_fill(s->send.p, n * cnt * es, sb->salt, sb->root, 0,
				 0);
		pat_fill(s->want.p, cnt * es, sb->salt, sb->root, 0,
			 me * cnt * es);
		ok = buf_dup(&s->sref, &s->send);
		s->out = &s->recv;
		s->wlen = cnt * es;
		break;
	case OP_ALLTOALL:
		ok = buf_alloc(&s->send, n * cnt * es) &&
		     buf_alloc(&s->recv, n * cnt * es) &&
		     buf_alloc(&s->want, n * cnt * es);
		if (!ok)
			break;
		for (int r = 0; r < n; r++) {
			pat_fill(s->send.p + r * cnt * es, cnt * es, sb->salt,
				 me, r, 0);
			pat_fill(s->want.p + r * cnt * es, cnt * es, sb->salt,
				 r, me, 0);
		}
		ok = buf_dup(&s->sref, &s->send);
		s->out = &s->recv;
		s->wlen = n * cnt * es;
		break;
	case OP_ALLTOALLV:
	case OP_ALLTOALLVC: {
		struct rng mr = rng_at(c->seed, c->index, n, KEY_MATRIX, k, 0,
				       0);
		struct rng sl = rng_at(c->seed, c->index, n, KEY_LAYOUT, k, 1,
				       me);
		struct rng rl = rng_at(c->seed, c->index, n, KEY_LAYOUT, k, 2,
				       me);
		bool sparse = below(&mr, 3) == 0;

		for (int i = 0; i < n * n; i++)
			s->m[i] = sparse && below(&mr, 2) ? 0
							   : pick_vcount(&mr);
		for (int r = 0; r < n; r++) {
			cs[r] = s->m[me * n + r];
			rc[r] = s->m[r * n + me];
		}
		if (sb->op == OP_ALLTOALLV) {
			sext = layout(&sl, n, cs, ds);
			rext = layout(&rl, n, rc, rd);
		} else {
			/* VC: packed blocks in rank order (spec 2.2) */
			sext = rext = 0;
			for (int r = 0; r < n; r++) {
				ds[r] = sext;
				sext += cs[r];
				rd[r] = rext;
				rext += rc[r];
			}
		}
		ok = buf_alloc(&s->send, sext * es) &&
		     buf_alloc(&s->recv, rext * es) &&
		     buf_alloc(&s->want, rext * es);
		if (!ok)
			break;
		for (int r = 0; r < n; r++) {
			pat_fill(s->send.p + ds[r] * es, cs[r] * es, sb->salt,
				 me, r, 0);
			pat_fill(s->want.p + rd[r] * es, rc[r] * es, sb->salt,
				 r, me, 0);
		}
		ok = buf_dup(&s->sref, &s->send);
		s->out = &s->recv;
		s->wlen = rext * es;
		break;
	}
	case OP_BATCH:
	case OP_GROUP_P2P:
		gen_msgs(c, k, sb->op == OP_BATCH, s);
		return build_items(c, k, me, s);
	case OP_BARRIER:
		s->check_out = false;
		return true;
	case OP_COUNT:
		return false;
	}
	if (!ok)
		return false;
	s->sptr = s->send.p;
	s->rptr = s->recv.p;
	switch (sb->op) {
	case OP_ALLREDUCE:
	case OP_REDUCE:
		if (sb->inplace)
			s->rptr = s->sptr;
		break;
	case OP_ALLGATHER:
		if (sb->inplace)
			s->sptr = s->recv.p + me * cnt * es;
		break;
	case OP_REDUCE_SCATTER:
		if (sb->inplace)
			s->rptr = s->send.p + s->woff;
		break;
	case OP_SCATTER:
		/* non-root sendBuf may be NULL */
		if (me != (int)sb->root && below(&nr, 2))
			s->sptr = NULL;
		break;
	case OP_ALLGATHERV:
		if (cs[me] == 0 && below(&nr, 2))
			s->sptr = NULL;
		break;
	case OP_REDUCE_SCATTERV:
		if (cs[me] == 0 && below(&nr, 2))
			s->rptr = NULL;
		break;
	case OP_ALLTOALLV:
	case OP_ALLTOALLVC:
		/* NULL buffers are allowed when all their counts are 0 */
		if (sext == 0 && below(&nr, 2))
			s->sptr = NULL;
		if (rext == 0 && below(&nr, 2))
			s->rptr = NULL;
		break;
	default:
		break;
	}
	return true;
}

static void subrun_free(struct subrun *s)
{
	buf_free(&s->send);
	buf_free(&s->recv);
	buf_free(&s->want);
	buf_free(&s->sref);
}

static HcclResult issue(const struct rcase *c, int me, struct subrun *s,
			HcclComm comm, aclrtStream st)
{
	const struct sub *sb = s->s;
	uint64_t cnt = sb->count;
	HcclDataType t = sb->dtype;
	HcclResult ret = HCCL_SUCCESS;

	(void)c;
	switch (sb->op) {
	case OP_ALLREDUCE:
		return HcclAllReduce(s->sptr, s->rptr, cnt, t, sb->redop, comm,
				     st);
	case OP_BROADCAST:
		return HcclBroadcast(s->rptr, cnt, t, sb->root, comm, st);
	case OP_REDUCE:
		return HcclReduce(s->sptr, s->rptr, cnt, t, sb->redop, sb->root,
				  comm, st);
	case OP_ALLGATHER:
		return HcclAllGather(s->sptr, s->rptr, cnt, t, comm, st);
	case OP_ALLGATHERV:
		return HcclAllGatherV(s->sptr, s->v[0][me], s->rptr, s->v[0],
				      s->v[1], t, comm, st);
	case OP_REDUCE_SCATTER:
		return HcclReduceScatter(s->sptr, s->rptr, cnt, t, sb->redop,
					 comm, st);
	case OP_REDUCE_SCATTERV:
		return HcclReduceScatterV(s->sptr, s->v[0], s->v[1], s->rptr,
					  s->v[0][me], t, sb->redop, comm, st);
	case OP_SCATTER:
		return HcclScatter(s->sptr, s->rptr, cnt, t, sb->root, comm,
				   st);
	case OP_ALLTOALL:
		return HcclAlltoAll(s->sptr, cnt, t, s->rptr, cnt, t, comm, st);
	case OP_ALLTOALLV:
		return HcclAlltoAllV(s->sptr, s->v[0], s->v[1], t, s->rptr,
				     s->v[2], s->v[3], t, comm, st);
	case OP_ALLTOALLVC:
		return HcclAlltoAllVC(s->sptr, s->m, t, s->rptr, t, comm, st);
	case OP_BATCH:
		return HcclBatchSendRecv(s->items, s->nitems, comm, st);
	case OP_GROUP_P2P:
		for (uint32_t i = 0; i < s->nitems && ret == HCCL_SUCCESS;
		     i++) {
			HcclSendRecvItem *it = &s->items[i];

			if (it->sendRecvType == HCCL_SEND)
				ret = HcclSend(it->buf, it->count, it->dataType,
					       it->remoteRank, comm, st);
			else
				ret = HcclRecv(it->buf, it->count, it->dataType,
					       it->remoteRank, comm, st);
		}
		return ret;
	case OP_BARRIER:
		return HcclBarrier(comm, st);
	case OP_COUNT:
		break;
	}
	return HCCL_E_INTERNAL;
}

static bool guard_ok(const struct buf *b)
{
	if (!b->p)
		return true;
	for (size_t i = 0; i < GUARD; i++)
		if (b->p[b->bytes + i] != GUARD_BYTE)
			return false;
	return true;
}

static void compare(struct ctx *x, int k, const char *what,
		    const unsigned char *got, const unsigned char *want,
		    size_t bytes, size_t es)
{
	size_t i;

	if (!memcmp(got, want, bytes))
		return;
	for (i = 0; got[i] == want[i]; i++)
		;
	report(x, k, "%s differs at byte %zu (element %zu): got 0x%02x, "
		     "want 0x%02x",
	       what, i, i / (es ? es : 1), got[i], want[i]);
}

static void check(struct ctx *x, int k, struct subrun *s)
{
	size_t es = ohc_test_dtype_size(s->s->dtype);

	if (s->s->op == OP_BATCH || s->s->op == OP_GROUP_P2P)
		es = 1;
	if (s->check_out && s->out)
		compare(x, k, "result", s->out->p + s->woff,
			s->want.p + s->woff, s->wlen, es);
	if (s->sref.p)
		compare(x, k, "input (must stay unchanged)", s->send.p,
			s->sref.p, s->send.bytes, es);
	if (!guard_ok(&s->send))
		report(x, k, "write past the end of the send buffer");
	if (!guard_ok(&s->recv))
		report(x, k, "write past the end of the receive buffer");
}

struct rank_env {
	HcclComm comms[NKINDS];
	aclrtStream stream;
	int rank;
	const char *mode;
};

/* Run one case; returns mismatches, or -1 if a call failed. */
static int run_case(const struct rcase *c, const struct rank_env *e)
{
	struct ctx x = {c, e->rank, e->mode, 0};
	HcclComm comm = e->comms[c->comm];
	aclrtStream st = uses_stream(c, e->rank) ? e->stream : NULL;
	struct subrun *s = calloc(MAX_SUB, sizeof(*s));
	bool failed = false;
	HcclResult ret;
	int k;

	if (!s)
		return -1;
	for (k = 0; k < c->nsub; k++) {
		if (!prepare(c, k, e->rank, &s[k])) {
			report(&x, k, "out of memory preparing buffers");
			failed = true;
			goto free_subs;
		}
	}
	for (int d = 0; d < c->group; d++)
		HcclGroupStart();
	if (c->group) {
		bool on = false;

		if (HcclGroupStatusGet(&on) != HCCL_SUCCESS || !on)
			report(&x, 0, "HcclGroupStatusGet says no group");
	}
	for (k = 0; k < c->nsub && !failed; k++) {
		ret = issue(c, e->rank, &s[k], comm, st);
		if (ret != HCCL_SUCCESS) {
			report(&x, k, "call returned %d", ret);
			failed = true;
		}
	}
	for (int d = c->group; d > 0; d--) {
		ret = HcclGroupEnd();
		if (ret != HCCL_SUCCESS && !failed) {
			report(&x, 0, "HcclGroupEnd (depth %d) returned %d", d,
			       ret);
			failed = true;
		}
	}
	if (st && aclrtSynchronizeStream(st)) {
		HcclResult async = HCCL_SUCCESS;

		HcclGetCommAsyncError(comm, &async);
		report(&x, 0, "stream failed, async error %d", async);
		failed = true;
	}
	if (!failed)
		for (k = 0; k < c->nsub; k++)
			check(&x, k, &s[k]);
free_subs:
	for (k = 0; k < c->nsub; k++)
		subrun_free(&s[k]);
	free(s);
	return failed ? -1 : x.bad;
}

struct run_cfg {
	HcclRootInfo roots[NKINDS]; /* processes map this struct shared */
	int ncomms;
	uint64_t seed;
	int ncases;
	int only;		/* >= 0: run only this case */
	int verbose;		/* print every case (rank 0) */
	const char *mode;
	bool split;		/* run on sub-communicators */
	HcclComm tcomms[MAX_RANKS];
};

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : dflt;
}

static int run_cases(const struct run_cfg *cfg, const struct rank_env *e,
		     int nranks)
{
	int bad = 0, skipped = 0, ran = 0;
	double t0 = ohc_test_now_s();

	for (int i = 0; i < cfg->ncases; i++) {
		struct rcase c;
		const char *why;
		int r;

		if (cfg->only >= 0 && i != cfg->only)
			continue;
		gen_case(cfg->seed, (uint32_t)i, nranks, cfg->ncomms, &c);
		why = known_failing(&c);
		if (why) {
			skipped++;
			continue;
		}
		if (cfg->verbose && e->rank == 0) {
			char desc[1024];

			describe(&c, 0, desc, sizeof(desc));
			fprintf(stderr, "random[%s]: case %d: %s\n", e->mode,
				i, desc);
		}
		r = run_case(&c, e);
		ran++;
		if (r < 0) {
			/* the ranks are out of step now: stop */
			bad++;
			break;
		}
		bad += r;
	}
	if (e->rank == 0)
		fprintf(stderr,
			"random[%s]: %d ranks, %d cases run, %d skipped as "
			"known failing, %.1f s\n",
			e->mode, nranks, ran, skipped, ohc_test_now_s() - t0);
	return bad;
}

static void test_env(void)
{
	/* a hang becomes an error; zero-count warnings are noise here */
	setenv("HCCL_EXEC_TIMEOUT", "60", 0);
	setenv("OPENHCCL_DEBUG", "ERROR", 0);
}

/* Communicators first..ncomms-1 of the run, one per comm_kinds entry. */
static int init_comms(struct run_cfg *cfg, int rank, int nranks, int first,
		      struct rank_env *e)
{
	for (int k = first; k < cfg->ncomms; k++) {
		HcclCommConfig conf;
		HcclResult ret;

		HcclCommConfigInit(&conf);
		if (comm_kinds[k].algo)
			snprintf(conf.hcclAlgo, sizeof(conf.hcclAlgo), "%s",
				 comm_kinds[k].algo);
		conf.hcclDeterministic = comm_kinds[k].deterministic;
		ret = k == 0 ? HcclCommInitRootInfo(nranks, &cfg->roots[k],
						    rank, &e->comms[k])
			     : HcclCommInitRootInfoConfig(nranks,
							  &cfg->roots[k], rank,
							  &conf, &e->comms[k]);
		if (ret != HCCL_SUCCESS) {
			fprintf(stderr, "rank %d: init of comm %d: %d\n", rank,
				k, ret);
			while (--k >= first)
				HcclCommDestroy(e->comms[k]);
			return 1;
		}
	}
	return 0;
}

/* ---- sub-communicator runs ------------------------------------------ */

struct split_plan {
	int ngroups;
	int group_of[MAX_RANKS]; /* -1: outside every group */
	uint32_t members[2][MAX_RANKS];
	uint32_t nmembers[2];
};

static void plan_split(uint64_t seed, int nranks, struct split_plan *p)
{
	struct rng r = rng_at(seed, 0, nranks, KEY_SPLIT, 0, 0, 0);
	int order[MAX_RANKS];

	memset(p, 0, sizeof(*p));
	p->ngroups = nranks >= 2 ? 1 + (int)below(&r, 2) : 1;
	for (int i = 0; i < nranks; i++)
		order[i] = i;
	shuffle(&r, order, nranks);
	for (int i = 0; i < nranks; i++) {
		int g;

		if (i < p->ngroups)
			g = i; /* no group is empty */
		else if (below(&r, 6) == 0)
			g = -1;
		else
			g = (int)below(&r, (uint64_t)p->ngroups);
		p->group_of[order[i]] = g;
	}
	for (int w = 0; w < nranks; w++) {
		int g = p->group_of[w];

		if (g >= 0)
			p->members[g][p->nmembers[g]++] = (uint32_t)w;
	}
}

/*
 * Rank wrank's sub-communicators, one per comm_kinds entry: even kinds
 * split from world, odd ones from the kind-0 sub-communicator (all its
 * ranks). Fills e (comms, rank) and *n_p; *n_p = 0 outside every group.
 */
static int split_comms(const struct run_cfg *cfg, const struct split_plan *p,
		       HcclComm world, int wrank, struct rank_env *e,
		       uint32_t *n_p)
{
	int g = p->group_of[wrank];
	uint32_t n = g >= 0 ? p->nmembers[g] : 0, me = 0;
	uint32_t all[MAX_RANKS], mine[MAX_RANKS];

	for (uint32_t i = 0; i < n; i++) {
		all[i] = i;
		mine[i] = p->members[g][i];
		if (mine[i] == (uint32_t)wrank)
			me = i;
	}
	for (int k = 0; k < cfg->ncomms; k++) {
		HcclCommConfig conf;
		HcclComm parent = k % 2 ? e->comms[0] : world, sub = NULL;
		HcclResult ret;
		uint32_t got = 0;

		HcclCommConfigInit(&conf);
		if (comm_kinds[k].algo)
			snprintf(conf.hcclAlgo, sizeof(conf.hcclAlgo), "%s",
				 comm_kinds[k].algo);
		conf.hcclDeterministic = comm_kinds[k].deterministic;
		if (g < 0) {
			if (k % 2)
				continue; /* not in the parent either */
			ret = HcclCreateSubCommConfig(&world, 0, NULL,
						      0xFFFFFFFFu, 0xFFFFFFFFu,
						      &conf, &sub);
			if (ret != HCCL_SUCCESS || sub) {
				fprintf(stderr, "rank %d: non-member split "
						"%d: %d, %p\n",
					wrank, k, ret, sub);
				return 1;
			}
			continue;
		}
		ret = HcclCreateSubCommConfig(&parent, n,
					      k % 2 ? all : mine,
					      100 * (uint64_t)k + (uint64_t)g,
					      me, &conf, &sub);
		if (ret != HCCL_SUCCESS ||
		    HcclGetRankId(sub, &got) != HCCL_SUCCESS || got != me) {
			fprintf(stderr, "rank %d: split %d (group %d): %d\n",
				wrank, k, g, ret);
			return 1;
		}
		e->comms[k] = sub;
	}
	e->rank = (int)me;
	*n_p = n;
	return 0;
}

/* Split, run the group's cases, destroy world first, nested ones last. */
static int run_split(const struct run_cfg *cfg, HcclComm world, int wrank,
		     int nranks, struct rank_env *e)
{
	struct split_plan p;
	char mode[64];
	uint32_t n = 0;
	int bad = 0;

	plan_split(cfg->seed, nranks, &p);
	if (wrank == 0)
		for (int g = 0; g < p.ngroups; g++) {
			fprintf(stderr, "random[%s]: group %d:", cfg->mode, g);
			for (uint32_t i = 0; i < p.nmembers[g]; i++)
				fprintf(stderr, " %u", p.members[g][i]);
			fprintf(stderr, "\n");
		}
	memset(e->comms, 0, sizeof(e->comms));
	if (split_comms(cfg, &p, world, wrank, e, &n))
		bad++;
	if (HcclCommDestroy(world) != HCCL_SUCCESS)
		bad++;
	if (!bad && n) {
		snprintf(mode, sizeof(mode), "%s group %d", cfg->mode,
			 p.group_of[wrank]);
		e->mode = mode;
		bad += run_cases(cfg, e, (int)n);
		/*
		 * Nobody destroys before everyone is done: a peer may still
		 * be reaping its last large (rendezvous) send, and the shm
		 * transport takes a consumer that left for a dead peer.
		 */
		if (!bad && HcclBarrier(e->comms[0], NULL) != HCCL_SUCCESS)
			bad++;
	}
	for (int k = 0; k < cfg->ncomms; k++)
		if (e->comms[k] && HcclCommDestroy(e->comms[k]) != HCCL_SUCCESS)
			bad++;
	return bad;
}

static int proc_rank(int rank, int nranks, void *p)
{
	struct run_cfg *cfg = p;
	struct rank_env e = {{NULL}, NULL, rank, cfg->mode};
	int bad = 0;

	if (aclInit(NULL) || aclrtSetDevice(rank) ||
	    aclrtCreateStream(&e.stream))
		return 1;
	if (cfg->split) {
		HcclComm world;

		if (HcclCommInitRootInfo(nranks, &cfg->roots[0], rank,
					 &world) != HCCL_SUCCESS)
			return 1;
		bad = run_split(cfg, world, rank, nranks, &e);
		goto out;
	}
	if (init_comms(cfg, rank, nranks, 0, &e))
		return 1;
	bad = run_cases(cfg, &e, nranks);
	for (int k = 0; k < cfg->ncomms; k++)
		if (HcclCommDestroy(e.comms[k]) != HCCL_SUCCESS)
			bad++;
out:
	aclrtDestroyStream(e.stream);
	aclrtResetDevice(rank);
	aclFinalize();
	return bad;
}

static struct run_cfg *new_cfg(const char *mode, int ncases, bool split)
{
	struct run_cfg *cfg = mmap(NULL, sizeof(*cfg), PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(cfg, MAP_FAILED);
	cfg->seed = ohc_test_seed(mode);
	cfg->ncases = env_int("OHC_TEST_CASES", ncases);
	cfg->only = env_int("OHC_TEST_CASE", -1);
	cfg->verbose = env_int("OHC_TEST_VERBOSE", 0);
	cfg->mode = mode;
	cfg->ncomms = NKINDS;
	cfg->split = split;
	/* a split run builds one world; thread runs use HcclCommInitAll */
	for (size_t k = 0; k < (split ? 1 : NKINDS); k++)
		cr_assert_eq(HcclGetRootInfo(&cfg->roots[k]), HCCL_SUCCESS);
	return cfg;
}

static void run_procs(const char *mode, int nranks, int ncases, bool split)
{
	struct run_cfg *cfg;

	test_env();
	cfg = new_cfg(mode, ncases, split);
	cr_assert_eq(ohc_test_fork_ranks(nranks, proc_rank, cfg, 400), 0,
		     "%s: some ranks failed (seed %llu)", mode,
		     (unsigned long long)cfg->seed);
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
	munmap(cfg, sizeof(*cfg));
}

Test(random, procs4, .timeout = 600)
{
	run_procs("procs4", 4, 500, false);
}

Test(random, procs8, .timeout = 600)
{
	run_procs("procs8", 8, 250, false);
}

/* Three splits of 8 process ranks (a fresh seed, hence plan, each). */
Test(random, procs8_sub, .timeout = 600)
{
	for (int i = 0; i < 3; i++)
		run_procs("procs8_sub", 8, 150, true);
}

/* The other sizes, 1 (degenerate local copies) included. */
Test(random, procs_1_to_7, .timeout = 600)
{
	static const char *modes[] = {"procs1", "procs2", "procs3",
				      "procs5", "procs6", "procs7"};
	static const int sizes[] = {1, 2, 3, 5, 6, 7};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		run_procs(modes[i], sizes[i], 60, false);
}

static struct run_cfg *thread_cfg;

static int thread_rank(int rank, int nranks, void *p)
{
	struct rank_env e = {{thread_cfg->tcomms[rank]}, NULL, rank,
			     thread_cfg->mode};
	int bad;

	(void)p;
	if (aclrtSetDevice(rank) || aclrtCreateStream(&e.stream))
		return 1;
	if (thread_cfg->split) {
		bad = run_split(thread_cfg, thread_cfg->tcomms[rank], rank,
				nranks, &e);
		goto out;
	}
	/* the algorithm variants: root-info communicators of threads */
	if (init_comms(thread_cfg, rank, nranks, 1, &e))
		return 1;
	bad = run_cases(thread_cfg, &e, nranks);
	for (int k = 1; k < thread_cfg->ncomms; k++)
		if (HcclCommDestroy(e.comms[k]) != HCCL_SUCCESS)
			bad++;
out:
	aclrtDestroyStream(e.stream);
	aclrtResetDevice(rank);
	return bad;
}

static void run_threads(const char *mode, int nranks, int ncases, bool split)
{
	int32_t devs[MAX_RANKS];

	test_env();
	thread_cfg = new_cfg(mode, ncases, split);
	for (int i = 0; i < nranks; i++)
		devs[i] = i;
	cr_assert_eq(aclInit(NULL), 0);
	cr_assert_eq(HcclCommInitAll(nranks, devs, thread_cfg->tcomms),
		     HCCL_SUCCESS);
	cr_assert_eq(ohc_test_thread_ranks(nranks, thread_rank, NULL), 0,
		     "%s: some ranks failed (seed %llu)", mode,
		     (unsigned long long)thread_cfg->seed);
	if (!split) /* a split run destroyed them already */
		for (int i = 0; i < nranks; i++)
			cr_assert_eq(HcclCommDestroy(thread_cfg->tcomms[i]),
				     HCCL_SUCCESS);
	aclFinalize();
	munmap(thread_cfg, sizeof(*thread_cfg));
}

Test(random, threads4, .timeout = 600)
{
	run_threads("threads4", 4, 500, false);
}

Test(random, threads3, .timeout = 600)
{
	run_threads("threads3", 3, 150, false);
}

Test(random, threads6_sub, .timeout = 600)
{
	for (int i = 0; i < 3; i++)
		run_threads("threads6_sub", 6, 150, true);
}

/* ---- two hosts ------------------------------------------------------ */

#define VM_PER 2
#define VM_PORT 26000

struct vm_run {
	struct run_cfg *cfg;
	int vm;
	char tables[NKINDS][64];
};

/*
 * One communicator per algorithm setting, each from its own rank table
 * (its own bootstrap port); all but the first named, since rank-table
 * communicators are "hccl_world_group" by default.
 */
static int vm_rank(int local, int nlocal, void *p)
{
	struct vm_run *v = p;
	int rank = v->vm * VM_PER + local, n = 2 * nlocal, bad = 0;
	struct rank_env e = {{NULL}, NULL, rank, v->cfg->mode};

	if (aclInit(NULL) || aclrtSetDevice(local) ||
	    aclrtCreateStream(&e.stream))
		return 1;
	for (size_t k = 0; k < NKINDS; k++) {
		HcclCommConfig conf;

		HcclCommConfigInit(&conf);
		if (comm_kinds[k].algo)
			snprintf(conf.hcclAlgo, sizeof(conf.hcclAlgo), "%s",
				 comm_kinds[k].algo);
		conf.hcclDeterministic = comm_kinds[k].deterministic;
		if (k)
			snprintf(conf.hcclCommName, sizeof(conf.hcclCommName),
				 "random_%zu", k);
		if (HcclCommInitClusterInfoConfig(v->tables[k], (uint32_t)rank,
						  &conf, &e.comms[k]) !=
		    HCCL_SUCCESS) {
			fprintf(stderr, "rank %d: init of comm %zu failed\n",
				rank, k);
			bad = 1;
			goto destroy;
		}
	}
	bad = run_cases(v->cfg, &e, n);
	if (!bad && HcclBarrier(e.comms[0], NULL) != HCCL_SUCCESS)
		bad++;
destroy:
	for (size_t k = 0; k < NKINDS; k++)
		if (e.comms[k] && HcclCommDestroy(e.comms[k]) != HCCL_SUCCESS)
			bad++;
	aclrtDestroyStream(e.stream);
	aclrtResetDevice(local);
	aclFinalize();
	return bad;
}

Test(random, two_vms, .timeout = 900)
{
	struct vm_run *v = mmap(NULL, sizeof(*v), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct run_cfg *cfg;

	cr_assert_neq(v, MAP_FAILED);
	if (!getenv("OHC_VM_COUNT") || strcmp(getenv("OHC_VM_COUNT"), "2"))
		cr_skip_test("needs two hosts: ci/soft-roce/run-vm.sh --vms 2");
	for (size_t k = 0; k < NKINDS; k++) {
		snprintf(v->tables[k], sizeof(v->tables[k]),
			 "/tmp/ohc_random_%zu.json", k);
		v->vm = ohc_test_two_vm_table(v->tables[k], VM_PER,
					      VM_PORT + 8 * (int)k);
		cr_assert_geq(v->vm, 0, "cannot write %s", v->tables[k]);
	}
	test_env();
	cfg = mmap(NULL, sizeof(*cfg), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(cfg, MAP_FAILED);
	/* both VMs must draw the same cases: no time-based seed here */
	if (!getenv("OHC_TEST_SEED"))
		setenv("OHC_TEST_SEED", "20261202", 1);
	cfg->seed = ohc_test_seed("two_vms");
	cfg->ncases = env_int("OHC_TEST_CASES", 40);
	cfg->only = env_int("OHC_TEST_CASE", -1);
	cfg->verbose = env_int("OHC_TEST_VERBOSE", 0);
	cfg->mode = "two_vms";
	cfg->ncomms = NKINDS;
	v->cfg = cfg;
	cr_assert_eq(ohc_test_fork_ranks(VM_PER, vm_rank, v, 800), 0,
		     "two_vms: some ranks of VM %d failed (seed %llu)", v->vm,
		     (unsigned long long)cfg->seed);
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
	for (size_t k = 0; k < NKINDS; k++)
		unlink(v->tables[k]);
	munmap(cfg, sizeof(*cfg));
	munmap(v, sizeof(*v));
}
