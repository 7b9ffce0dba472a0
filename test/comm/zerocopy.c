/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Zero-copy memory (HcclCommSetMemoryRange & co.) and symmetric windows
 * between real processes over shm, over verbs with HCCL_INTRA_ROCE_ENABLE=1
 * in the Soft-RoCE VM (messages from OPENHCCL_RDMA_RNDV_KB up, set to
 * 256 here, are RDMA-written into the peer's buffer), and across two VMs
 * (two_vms: two ranks per VM, shm inside, verbs across; skipped
 * elsewhere): collectives on activated memory and on windows are correct
 * and move no byte through staging (ohc_comm_stats): reductions into
 * their own destination over verbs come through a landing buffer, counted
 * as such, the rest zero-copy; same-host peers load and store through
 * HcclSymWinGetPeerPointer, every misuse gets its error and changes
 * nothing, and nothing leaks (fds, mappings).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>
#include <hccl/hccl_comm.h>
#include <hccl/hccl_sym_win.h>

#include "algo/patterns/partition.h"
#include "algo/patterns/ring.h"
#include "comm/comm.h"
#include "helpers/ohc_test.h"
#include "runtime/ohc_rt.h"
#include "zerocopy/zc.h"

#define MIB ((size_t)1 << 20)
#define K 1000003

struct proc_arg {
	HcclRootInfo root;
	char table[128]; /* two VMs: the rank table ("": root info) */
	int vm;		 /* two VMs: this VM's index */
	ohc_test_rank_fn fn;
};

#define PER_VM 2
static int per_vm; /* two VMs: ranks per VM (0: one host) */

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, "rank %d: ", rank);                            \
		fprintf(stderr, __VA_ARGS__);                                  \
		fputc('\n', stderr);                                           \
		bad++;                                                         \
	} while (0)

#define EXPECT(cond, ...)                                                      \
	do {                                                                   \
		if (!(cond))                                                   \
			FAIL(__VA_ARGS__);                                     \
	} while (0)

/* One physical allocation mapped at va. */
struct pmem {
	void *va;
	aclrtDrvMemHandle h;
	size_t size;
};

static int pmem_map(struct pmem *m, void *va, size_t size)
{
	aclrtPhysicalMemProp prop;

	memset(&prop, 0, sizeof(prop));
	prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
	prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
	prop.memAttr = ACL_HBM_MEM_HUGE;
	prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	m->va = va;
	m->size = size;
	if (aclrtMallocPhysical(&m->h, size, &prop, 0))
		return -1;
	if (aclrtMapMem(va, size, 0, m->h, 0)) {
		aclrtFreePhysical(m->h);
		return -1;
	}
	return 0;
}

static void pmem_unmap(struct pmem *m)
{
	aclrtUnmapMem(m->va);
	aclrtFreePhysical(m->h);
}

/*
 * Shared-memory mappings of this process (memfds: the runtime's physical
 * memory, shm segments, imports of peers' memory). Anonymous mappings
 * come and go with malloc and are not counted.
 */
static int count_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "memfd:") != NULL;
	fclose(f);
	return n;
}

static struct ohc_xfer_stats stats_of(HcclComm comm)
{
	struct ohc_xfer_stats st;

	ohc_comm_stats(ohc_comm_lookup(comm), &st);
	return st;
}

static int device_of(int rank)
{
	return per_vm ? rank % per_vm : rank % 4;
}

/*
 * Does the pair go over verbs? Every pair with HCCL_INTRA_ROCE_ENABLE=1
 * (the Soft-RoCE VM stage), pairs on different VMs in two_vms, else none.
 */
static int over_verbs(int a, int b)
{
	const char *roce = getenv("HCCL_INTRA_ROCE_ENABLE");

	if (a == b)
		return 0;
	if (roce && !strcmp(roce, "1"))
		return 1;
	return per_vm && a / per_vm != b / per_vm;
}

static int any_verbs(int rank, int nranks)
{
	for (int p = 0; p < nranks; p++)
		if (over_verbs(rank, p))
			return 1;
	return 0;
}

/*
 * Over RDMA the zero copy is the rendezvous, which is off by default on
 * software devices (Soft-RoCE: the slot path with pulled fragments is
 * faster there): on here, at the NICs' default threshold.
 */
static void rndv_on(void)
{
	setenv("OPENHCCL_RDMA_RNDV_KB", "256", 1);
}

TestSuite(zerocopy, .init = rndv_on);

/*
 * Elements per rank and block of the zero-copy checks: every message of
 * the zero-copy algorithms (ring chunks: n / nranks elements) reaches
 * OPENHCCL_RDMA_RNDV_KB (256 KiB here), so verbs writes it in place.
 */
static size_t zc_count(int nranks)
{
	return (size_t)nranks * 65541 + 3;
}

/* With OHC_TEST_ZC_STATS set: print the bytes op moved per path. */
static void note(HcclComm comm, int rank, const char *op,
		 struct ohc_xfer_stats *prev)
{
	struct ohc_xfer_stats now = stats_of(comm);
	unsigned long long d[OHC_PATH_N];

	for (int i = 0; i < OHC_PATH_N; i++)
		d[i] = now.bytes[i] - prev->bytes[i];
	if (getenv("OHC_TEST_ZC_STATS"))
		fprintf(stderr,
			"rank %d: %-20s staged %9llu direct %9llu zero-copy "
			"%9llu landing %9llu\n",
			rank, op, d[OHC_PATH_STAGED], d[OHC_PATH_DIRECT],
			d[OHC_PATH_ZC], d[OHC_PATH_LANDING]);
	*prev = now;
}

/*
 * AllReduce (sum) of in[i] = rank * K + step * i into dst (in: in place),
 * checked; the failures found.
 */
static int allreduce_checked(HcclComm comm, aclrtStream stream, int rank,
			     int nranks, int32_t *in, int32_t *dst, size_t n,
			     int32_t step, const char *what,
			     struct ohc_xfer_stats *st)
{
	int bad = 0;

	for (size_t i = 0; i < n; i++)
		in[i] = rank * K + step * (int32_t)i;
	EXPECT(!HcclAllReduce(in, dst, n, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM,
			      comm, stream) &&
		       !aclrtSynchronizeStream(stream),
	       "%s failed", what);
	note(comm, rank, what, st);
	for (size_t i = 0; i < n; i++) {
		int32_t want =
			(int32_t)((int64_t)K * nranks * (nranks - 1) / 2 +
				  (int64_t)nranks * step * (int64_t)i);
		if (dst[i] != want) {
			FAIL("%s[%zu] = %d, want %d", what, i, dst[i], want);
			break;
		}
	}
	return bad;
}

/*
 * The five collectives with inputs at in and outputs at out (int32 sum),
 * and an AllReduce in place in in, checked against closed forms. n
 * elements per rank and block.
 */
static int run_colls(HcclComm comm, aclrtStream stream, int rank, int nranks,
		     int32_t *in, int32_t *out, size_t n)
{
	struct ohc_xfer_stats st = stats_of(comm);
	int bad = 0;

	/* AllReduce */
	bad += allreduce_checked(comm, stream, rank, nranks, in, out, n, 1,
				 "AllReduce", &st);
	/* AllGather */
	EXPECT(!HcclAllGather(in, out, n, HCCL_DATA_TYPE_INT32, comm, stream) &&
		       !aclrtSynchronizeStream(stream),
	       "allgather failed");
	note(comm, rank, "AllGather", &st);
	for (int r = 0; r < nranks; r++)
		for (size_t i = 0; i < n; i++)
			if (out[r * n + i] != r * K + (int32_t)i) {
				FAIL("allgather[%d][%zu] = %d", r, i,
				     out[r * n + i]);
				r = nranks;
				break;
			}
	/* ReduceScatter: in holds nranks blocks */
	for (size_t j = 0; j < n * nranks; j++)
		in[j] = rank * K + (int32_t)j;
	EXPECT(!HcclReduceScatter(in, out, n, HCCL_DATA_TYPE_INT32,
				  HCCL_REDUCE_SUM, comm, stream) &&
		       !aclrtSynchronizeStream(stream),
	       "reducescatter failed");
	note(comm, rank, "ReduceScatter", &st);
	for (size_t i = 0; i < n; i++) {
		int32_t want =
			(int32_t)((int64_t)K * nranks * (nranks - 1) / 2 +
				  (int64_t)nranks * (int64_t)(rank * n + i));
		if (out[i] != want) {
			FAIL("reducescatter[%zu] = %d, want %d", i, out[i],
			     want);
			break;
		}
	}
	/* Broadcast from rank nranks - 1, in out */
	for (size_t i = 0; i < n; i++)
		out[i] = rank == nranks - 1 ? 7 * (int32_t)i + 5 : -1;
	EXPECT(!HcclBroadcast(out, n, HCCL_DATA_TYPE_INT32, nranks - 1, comm,
			      stream) &&
		       !aclrtSynchronizeStream(stream),
	       "broadcast failed");
	note(comm, rank, "Broadcast", &st);
	for (size_t i = 0; i < n; i++)
		if (out[i] != 7 * (int32_t)i + 5) {
			FAIL("broadcast[%zu] = %d", i, out[i]);
			break;
		}
	/* AlltoAll: block p of in goes to rank p */
	for (int p = 0; p < nranks; p++)
		for (size_t i = 0; i < n; i++)
			in[p * n + i] = rank * K + p * 7 + (int32_t)i;
	EXPECT(!HcclAlltoAll(in, n, HCCL_DATA_TYPE_INT32, out, n,
			     HCCL_DATA_TYPE_INT32, comm, stream) &&
		       !aclrtSynchronizeStream(stream),
	       "alltoall failed");
	note(comm, rank, "AlltoAll", &st);
	for (int q = 0; q < nranks; q++)
		for (size_t i = 0; i < n; i++)
			if (out[q * n + i] != q * K + rank * 7 + (int32_t)i) {
				FAIL("alltoall[%d][%zu] = %d", q, i,
				     out[q * n + i]);
				q = nranks;
				break;
			}
	/* AllReduce in place */
	bad += allreduce_checked(comm, stream, rank, nranks, in, in, n, 3,
				 "AllReduce in place", &st);
	return bad;
}

/*
 * Bytes of run_colls at n >= zc_count elements that come through a
 * landing buffer: the reductions into their own destination (dst = dst
 * OP message) that come over verbs, where the message cannot land in
 * its destination. The direct ReduceScatter's steps after the first
 * (step k from rank - k) and the reduce-scatter half of the in-place
 * ring AllReduce (every step from the left).
 */
static uint64_t landing_expected(int rank, int nranks, size_t n)
{
	uint32_t r = (uint32_t)rank, nr = (uint32_t)nranks;
	uint64_t bytes = 0;

	for (int k = 2; k < nranks; k++)
		if (over_verbs(rank, (rank + nranks - k) % nranks))
			bytes += n * 4;
	if (over_verbs(rank, (int)ohc_ring_left(r, nr)))
		for (uint32_t st = 0; st + 1 < nr; st++)
			bytes += ohc_part_count(
					 n, nr,
					 ohc_ring_rs_recv_chunk(r, st, nr)) *
				 4;
	return bytes;
}

/*
 * run_colls on exported memory; the counters prove zero copies: nothing
 * staged or copied out of the sender, the reductions above through a
 * landing buffer, everything else zero-copy.
 */
static int run_colls_zc(HcclComm comm, aclrtStream stream, int rank, int nranks,
			int32_t *in, int32_t *out, size_t n, const char *what)
{
	struct ohc_xfer_stats s0 = stats_of(comm), s1;
	uint64_t want = landing_expected(rank, nranks, n), got[OHC_PATH_N];
	int bad = run_colls(comm, stream, rank, nranks, in, out, n);

	s1 = stats_of(comm);
	for (int i = 0; i < OHC_PATH_N; i++)
		got[i] = s1.bytes[i] - s0.bytes[i];
	EXPECT(!got[OHC_PATH_STAGED] && !got[OHC_PATH_DIRECT] &&
		       got[OHC_PATH_ZC] && got[OHC_PATH_LANDING] == want,
	       "%s, n %zu: %llu bytes staged, %llu direct, %llu zero-copy, "
	       "%llu through a landing buffer (%llu expected)",
	       what, n, (unsigned long long)got[OHC_PATH_STAGED],
	       (unsigned long long)got[OHC_PATH_DIRECT],
	       (unsigned long long)got[OHC_PATH_ZC],
	       (unsigned long long)got[OHC_PATH_LANDING],
	       (unsigned long long)want);
	return bad;
}

static int rank_setup(int rank, int nranks, struct proc_arg *a,
		      HcclComm *comm_p)
{
	if (a->table[0])
		return HcclCommInitClusterInfo(a->table, (uint32_t)rank,
					       comm_p) != HCCL_SUCCESS;
	return HcclCommInitRootInfo((uint32_t)nranks, &a->root, (uint32_t)rank,
				    comm_p) != HCCL_SUCCESS;
}

/*
 * A process rank's start: runtime, device, stream, the fd and mapping
 * counts rank_leaks compares against, then the communicator. Non-zero if
 * any of it failed.
 */
static int rank_begin(int rank, int nranks, void *p, aclrtStream *stream_p,
		      HcclComm *comm_p, int *fds0_p, int *maps0_p)
{
	if (aclInit(NULL) || aclrtSetDevice(device_of(rank)) ||
	    aclrtCreateStream(stream_p))
		return 1;
	*fds0_p = ohc_test_count_fds();
	*maps0_p = count_maps();
	return rank_setup(rank, nranks, p, comm_p);
}

static void run_procs(int nranks, ohc_test_rank_fn fn)
{
	struct proc_arg *a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(a, MAP_FAILED);
	memset(a, 0, sizeof(*a));
	cr_assert_eq(HcclGetRootInfo(&a->root), HCCL_SUCCESS);
	cr_assert_eq(ohc_test_fork_ranks(nranks, fn, a, 120), 0);
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
	munmap(a, sizeof(*a));
}

/*
 * After the communicator and the buffers are gone: every fd and shared
 * mapping counted at the start is back to its count. Ends the rank's
 * runtime; the failures found.
 */
static int rank_leaks(int rank, aclrtStream stream, int fds0, int maps0)
{
	int bad = 0;

	EXPECT(ohc_test_count_fds() == fds0, "fds: %d before, %d after", fds0,
	       ohc_test_count_fds());
	EXPECT(count_maps() == maps0, "mappings: %d before, %d after", maps0,
	       count_maps());
	aclrtDestroyStream(stream);
	aclFinalize();
	return bad;
}

/* ---- shared aclrtMalloc memory (implicit zero copy) ---- */

/*
 * Large aclrtMalloc buffers are shared memory (OPENHCCL_MALLOC_SHARED_KB),
 * so messages of OPENHCCL_SHM_ZC_KB and more out of them are read
 * zero-copy by peer processes over shm, without any registration: most
 * bytes zero-copy, results right; small ones (and ordinary malloc memory)
 * staged; every fd and mapping gone after destroy and free.
 */
static int implicit_rank(int rank, int nranks, void *p)
{
	const size_t n_big = zc_count(nranks), n_small = 5;
	struct ohc_xfer_stats s0, s1;
	aclrtStream stream;
	HcclComm comm;
	int32_t *in, *out;
	int bad = 0, fds0, maps0;

	if (rank_begin(rank, nranks, p, &stream, &comm, &fds0, &maps0) ||
	    aclrtMalloc((void **)&in, 8 * MIB, ACL_MEM_MALLOC_HUGE_FIRST) ||
	    aclrtMalloc((void **)&out, 16 * MIB, ACL_MEM_MALLOC_HUGE_FIRST))
		return 1;
	{
		struct ohc_rt_mem_info mi;

		EXPECT(!ohc_rt_mem_info(in, 8 * MIB, &mi) &&
			       !ohc_rt_mem_info(out + 1, 4, &mi) &&
			       mi.offset == 4 && mi.size == 16 * MIB,
		       "aclrtMalloc of 8 and 16 MiB is not shared memory");
	}
	s0 = stats_of(comm);
	bad += run_colls(comm, stream, rank, nranks, in, out, n_big);
	s1 = stats_of(comm);
	if (!any_verbs(rank, nranks))
		EXPECT(s1.bytes[OHC_PATH_ZC] - s0.bytes[OHC_PATH_ZC] >
			       2 * (s1.bytes[OHC_PATH_STAGED] -
				    s0.bytes[OHC_PATH_STAGED]),
		       "shared aclrtMalloc memory: %llu bytes zero-copy, "
		       "%llu staged",
		       (unsigned long long)(s1.bytes[OHC_PATH_ZC] -
					    s0.bytes[OHC_PATH_ZC]),
		       (unsigned long long)(s1.bytes[OHC_PATH_STAGED] -
					    s0.bytes[OHC_PATH_STAGED]));
	/* below OPENHCCL_SHM_ZC_KB: through the ring */
	s0 = stats_of(comm);
	bad += run_colls(comm, stream, rank, nranks, in, out, n_small);
	s1 = stats_of(comm);
	EXPECT(s1.bytes[OHC_PATH_ZC] == s0.bytes[OHC_PATH_ZC],
	       "small messages went zero-copy");
	HcclCommDestroy(comm);
	aclrtFree(in);
	aclrtFree(out);
	return bad + rank_leaks(rank, stream, fds0, maps0);
}

Test(zerocopy, shared_malloc_procs3, .timeout = 180)
{
	run_procs(3, implicit_rank);
}

/* ---- activated memory ---- */

static int activated_rank(int rank, int nranks, void *p)
{
	const size_t n_big = zc_count(nranks), n_small = 5;
	struct ohc_xfer_stats s0, s1;
	aclrtStream stream;
	HcclComm comm;
	struct pmem in, out;
	int32_t *plain_in, *plain_out;
	char *range;
	int bad = 0, fds0, maps0;

	if (rank_begin(rank, nranks, p, &stream, &comm, &fds0, &maps0))
		return 1;
	/* 32 MiB of address space: in = 8 MiB at 0, out = 16 MiB at 8 MiB */
	if (aclrtReserveMemAddress((void **)&range, 32 * MIB, 0, NULL, 1) ||
	    pmem_map(&in, range, 8 * MIB) ||
	    pmem_map(&out, range + 8 * MIB, 16 * MIB))
		return 1;
	EXPECT(HcclCommSetMemoryRange(comm, range, 32 * MIB, 0, 0) ==
		       HCCL_SUCCESS,
	       "set range");
	EXPECT(HcclCommActivateCommMemory(comm, in.va, in.size, 0, in.h, 0) ==
		       HCCL_SUCCESS,
	       "activate in");
	EXPECT(HcclCommActivateCommMemory(comm, out.va, out.size, 0, out.h,
					  0) == HCCL_SUCCESS,
	       "activate out");

	bad += run_colls_zc(comm, stream, rank, nranks, in.va, out.va, n_big,
			    "activated memory");
	/* small: over verbs below OPENHCCL_RDMA_RNDV_KB, through the slots */
	if (any_verbs(rank, nranks))
		bad += run_colls(comm, stream, rank, nranks, in.va, out.va,
				 n_small);
	else
		bad += run_colls_zc(comm, stream, rank, nranks, in.va, out.va,
				    n_small, "activated memory");

	/* The same on ordinary memory: staged or CMA, never zero-copy. */
	plain_in = malloc(8 * MIB);
	plain_out = malloc(16 * MIB);
	s0 = stats_of(comm);
	bad += run_colls(comm, stream, rank, nranks, plain_in, plain_out,
			 n_big);
	s1 = stats_of(comm);
	EXPECT(s1.bytes[OHC_PATH_ZC] == s0.bytes[OHC_PATH_ZC] &&
		       s1.bytes[OHC_PATH_LANDING] ==
			       s0.bytes[OHC_PATH_LANDING] &&
		       s1.bytes[OHC_PATH_STAGED] + s1.bytes[OHC_PATH_DIRECT] >
			       s0.bytes[OHC_PATH_STAGED] +
				       s0.bytes[OHC_PATH_DIRECT],
	       "ordinary memory counted as zero-copy");
	/* Output in ordinary memory: the op is not zero-copy. */
	s0 = stats_of(comm);
	EXPECT(!HcclAllGather(in.va, plain_out, n_big, HCCL_DATA_TYPE_INT32,
			      comm, stream) &&
		       !aclrtSynchronizeStream(stream),
	       "mixed allgather");
	s1 = stats_of(comm);
	EXPECT(s1.bytes[OHC_PATH_ZC] == s0.bytes[OHC_PATH_ZC],
	       "an op with its output outside activated memory went "
	       "zero-copy");
	free(plain_in);
	free(plain_out);

	EXPECT(HcclCommDeactivateCommMemory(comm, in.va) == HCCL_SUCCESS,
	       "deactivate in");
	EXPECT(HcclCommDeactivateCommMemory(comm, out.va) == HCCL_SUCCESS,
	       "deactivate out");
	/* Deactivated: later ops fall back to staging, still correct. */
	s0 = stats_of(comm);
	bad += run_colls(comm, stream, rank, nranks, in.va, out.va, n_small);
	s1 = stats_of(comm);
	EXPECT(s1.bytes[OHC_PATH_ZC] == s0.bytes[OHC_PATH_ZC],
	       "deactivated memory still zero-copy");
	EXPECT(HcclCommUnsetMemoryRange(comm, range) == HCCL_SUCCESS, "unset");
	EXPECT(ohc_zc_region_count() == 0, "regions left: %u",
	       ohc_zc_region_count());
	HcclCommDestroy(comm);
	pmem_unmap(&in);
	pmem_unmap(&out);
	aclrtReleaseMemAddress(range);
	return bad + rank_leaks(rank, stream, fds0, maps0);
}

Test(zerocopy, activated_collectives_procs3, .timeout = 180)
{
	run_procs(3, activated_rank);
}

Test(zerocopy, activated_collectives_procs2, .timeout = 180)
{
	run_procs(2, activated_rank);
}

/*
 * Landing with small RDMA WRITEs and a small send queue: each 256 KiB
 * chunk of a landing reduction is posted in one go, and with
 * OPENHCCL_RDMA_WRITE_KB=1 and 4 slots of 4 KiB that was 256 pieces for
 * a queue of 101: the sender waited for room forever. Over verbs only.
 */
Test(zerocopy, activated_small_writes_procs2, .timeout = 180)
{
	const char *roce = getenv("HCCL_INTRA_ROCE_ENABLE");

	if (!roce || strcmp(roce, "1"))
		cr_skip_test("needs every pair over verbs: the Soft-RoCE VM "
			     "stage (HCCL_INTRA_ROCE_ENABLE=1)");
	setenv("OPENHCCL_RDMA_WRITE_KB", "1", 1);
	setenv("OPENHCCL_RDMA_SLOTS", "4", 1);
	setenv("OPENHCCL_RDMA_SLOT_KB", "4", 1);
	/* a stall fails inside the harness's limit, with its flight record */
	setenv("HCCL_EXEC_TIMEOUT", "60", 0);
	run_procs(2, activated_rank);
}

/* ---- symmetric windows ---- */

static int window_rank(int rank, int nranks, void *p)
{
	const size_t wsize = 16 * MIB, n = zc_count(nranks);
	HcclCommSymWindow win = NULL, w2 = NULL, wbad = (HcclCommSymWindow)1;
	aclrtStream stream;
	HcclComm comm;
	struct pmem m, m2;
	char *range;
	size_t off = 0;
	unsigned regions0;
	int bad = 0, fds0, maps0;
	int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;

	if (rank_begin(rank, nranks, p, &stream, &comm, &fds0, &maps0) ||
	    aclrtReserveMemAddress((void **)&range, 32 * MIB, 0, NULL, 1) ||
	    pmem_map(&m, range, wsize) || pmem_map(&m2, range + wsize, 2 * MIB))
		return 1;
	memset(m.va, 0, wsize);

	/* misuse first: nothing may be left behind by any of it */
	regions0 = ohc_zc_region_count();
	EXPECT(HcclCommSymWinRegister(comm, m.va, wsize, &win, 0) ==
		       HCCL_E_PARA,
	       "flag 0 accepted");
	EXPECT(HcclCommSymWinRegister(comm, m.va, 0, &win, 1) == HCCL_E_PARA,
	       "size 0 accepted");
	EXPECT(HcclCommSymWinRegister(comm, NULL, wsize, &win, 1) == HCCL_E_PTR,
	       "NULL addr accepted");
	/* a window of another size on rank 0: every rank refuses */
	EXPECT(HcclCommSymWinRegister(comm, rank ? m.va : m2.va,
				      rank ? wsize : 2 * MIB, &win,
				      1) == HCCL_E_PARA,
	       "asymmetric window accepted");
	EXPECT(ohc_zc_region_count() == regions0,
	       "a refused window left %u regions",
	       ohc_zc_region_count() - regions0);

	EXPECT(HcclCommSymWinRegister(comm, m.va, wsize, &win, 1) ==
		       HCCL_SUCCESS,
	       "register");
	EXPECT(HcclCommSymWinGet(comm, (char *)m.va + 100, 10, &w2, &off) ==
			       HCCL_SUCCESS &&
		       w2 == win && off == 100,
	       "get: %p %zu", w2, off);
	EXPECT(HcclCommSymWinGet(comm, m2.va, 10, &w2, &off) ==
		       HCCL_E_NOT_FOUND,
	       "get outside any window");
	EXPECT(HcclCommSymWinGet(comm, (char *)m.va + wsize - 4, 8, &w2,
				 &off) == HCCL_E_NOT_FOUND,
	       "get across the window's end");

	/*
	 * store into the right neighbour's window, load after a barrier;
	 * a peer over verbs has no load/store address
	 */
	{
		int32_t *peer = NULL, *mine = m.va;

		if (over_verbs(rank, right))
			EXPECT(HcclSymWinGetPeerPointer(
				       win, 4096, (uint32_t)right,
				       (void **)&peer) == HCCL_E_NOT_SUPPORT,
			       "peer pointer over verbs");
		else
			EXPECT(HcclSymWinGetPeerPointer(
				       win, 4096, (uint32_t)right,
				       (void **)&peer) == HCCL_SUCCESS &&
				       peer,
			       "peer pointer");
		EXPECT(HcclSymWinGetPeerPointer(win, 0, (uint32_t)nranks,
						(void **)&peer) == HCCL_E_PARA,
		       "peer rank out of range");
		EXPECT(HcclSymWinGetPeerPointer(win, wsize, 0,
						(void **)&peer) == HCCL_E_PARA,
		       "offset out of range");
		EXPECT(HcclSymWinGetPeerPointer(wbad, 0, 0, (void **)&peer) ==
			       HCCL_E_PARA,
		       "bogus handle");
		for (int i = 0; i < 1000 && !over_verbs(rank, right); i++)
			peer[i] = rank * K + i;
		EXPECT(!HcclBarrier(comm, stream) &&
			       !aclrtSynchronizeStream(stream),
		       "barrier");
		for (int i = 0; i < 1000 && !over_verbs(rank, left); i++)
			if (mine[1024 + i] != left * K + i) {
				FAIL("window[%d] = %d, want %d", i,
				     mine[1024 + i], left * K + i);
				break;
			}
		/* our own pointer is our buffer */
		EXPECT(HcclSymWinGetPeerPointer(win, 8, (uint32_t)rank,
						(void **)&peer) ==
				       HCCL_SUCCESS &&
			       (char *)peer == (char *)m.va + 8,
		       "own pointer");
	}

	/* collectives on window buffers go zero-copy: in at 0, out at 8 MiB */
	bad += run_colls_zc(comm, stream, rank, nranks, m.va,
			    (int32_t *)((char *)m.va + 8 * MIB), n, "window");

	/* not while an op in flight uses it */
	if (rank != 0)
		usleep(300 * 1000);
	EXPECT(!HcclAllReduce(m.va, (char *)m.va + MIB, 1000,
			      HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, comm,
			      stream),
	       "enqueue");
	if (rank == 0)
		EXPECT(HcclCommSymWinDeregister(win) == HCCL_E_AGAIN,
		       "deregistering a window in use accepted");
	EXPECT(!aclrtSynchronizeStream(stream), "sync");

	EXPECT(HcclCommSymWinDeregister(win) == HCCL_SUCCESS, "deregister");
	EXPECT(HcclCommSymWinDeregister(win) == HCCL_E_PARA,
	       "second deregister accepted");
	EXPECT(ohc_zc_region_count() == regions0, "regions left");
	/* a window left registered goes with its communicator */
	EXPECT(HcclCommSymWinRegister(comm, m2.va, 2 * MIB, &w2, 1) ==
		       HCCL_SUCCESS,
	       "register a second window");
	HcclCommDestroy(comm);
	EXPECT(ohc_zc_region_count() == regions0,
	       "the window outlived its communicator");
	EXPECT(HcclCommSymWinDeregister(w2) == HCCL_E_PARA,
	       "a window of a destroyed communicator deregistered");
	pmem_unmap(&m);
	pmem_unmap(&m2);
	aclrtReleaseMemAddress(range);
	return bad + rank_leaks(rank, stream, fds0, maps0);
}

Test(zerocopy, windows_procs3, .timeout = 180)
{
	run_procs(3, window_rank);
}

/* ---- two VMs: two ranks per VM, shm inside, verbs across ---- */

static int two_vm_rank(int local, int nlocal, void *p)
{
	struct proc_arg *a = p;

	return a->fn(a->vm * nlocal + local, 2 * nlocal, p);
}

static void run_two_vms(struct proc_arg *a, ohc_test_rank_fn fn, int port)
{
	snprintf(a->table, sizeof(a->table), "/tmp/ohc_zc_two_vms_%d.json",
		 (int)getpid());
	a->vm = ohc_test_two_vm_table(a->table, PER_VM, port);
	if (a->vm < 0)
		cr_skip_test("needs two hosts: ci/soft-roce/run-vm.sh --vms 2");
	a->fn = fn;
	per_vm = PER_VM;
	/*
	 * An operation that stops moving fails on the timeout, well inside
	 * the harness's 280 s, and its flight record says which step waited
	 * for which rank (each part takes a few seconds under TCG).
	 */
	setenv("HCCL_EXEC_TIMEOUT", "120", 0);
	ohc_test_fork_settle();
	cr_expect_eq(ohc_test_fork_ranks(PER_VM, two_vm_rank, a, 280), 0);
	unlink(a->table);
	cr_expect_eq(ohc_test_shm_leftovers(), 0);
}

Test(zerocopy, two_vms, .timeout = 600)
{
	struct proc_arg *a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(a, MAP_FAILED);
	memset(a, 0, sizeof(*a));
	run_two_vms(a, activated_rank, 25000);
	run_two_vms(a, window_rank, 25100);
	munmap(a, sizeof(*a));
}

/* ---- misuse of ranges and blocks ---- */

static int misuse_rank(int rank, int nranks, void *p)
{
	struct ohc_xfer_stats s0, s1;
	aclrtStream stream;
	HcclComm comm;
	struct pmem a, b, c;
	char *range, *other;
	int bad = 0;

	if (aclInit(NULL) || aclrtSetDevice(rank % 4) ||
	    aclrtCreateStream(&stream) || rank_setup(rank, nranks, p, &comm) ||
	    aclrtReserveMemAddress((void **)&range, 16 * MIB, 0, NULL, 1) ||
	    aclrtReserveMemAddress((void **)&other, 4 * MIB, 0, NULL, 1) ||
	    pmem_map(&a, range, 4 * MIB) ||
	    pmem_map(&b, range + 4 * MIB, 4 * MIB) ||
	    pmem_map(&c, other, 2 * MIB))
		return 1;

	EXPECT(HcclCommSetMemoryRange(comm, range, 16 * MIB, 0, 0) ==
		       HCCL_SUCCESS,
	       "set range");
	EXPECT(HcclCommSetMemoryRange(comm, range + 8 * MIB, 16 * MIB, 0, 0) ==
		       HCCL_E_PARA,
	       "overlapping range accepted");
	EXPECT(HcclCommSetMemoryRange(comm, other, 4 * MIB, 64, 0) ==
		       HCCL_E_PARA,
	       "alignment accepted");
	EXPECT(HcclCommSetMemoryRange(NULL, other, 4 * MIB, 0, 0) == HCCL_E_PTR,
	       "NULL comm accepted");
	/* outside any set range */
	EXPECT(HcclCommActivateCommMemory(comm, c.va, c.size, 0, c.h, 0) ==
		       HCCL_E_PARA,
	       "activation outside a range accepted");
	/* wrong handle, wrong size, offset, flags */
	EXPECT(HcclCommActivateCommMemory(comm, a.va, a.size, 0, b.h, 0) ==
		       HCCL_E_PARA,
	       "foreign handle accepted");
	EXPECT(HcclCommActivateCommMemory(comm, a.va, 2 * MIB, 0, a.h, 0) ==
		       HCCL_E_PARA,
	       "part of a mapping accepted");
	EXPECT(HcclCommActivateCommMemory(comm, a.va, a.size, 4096, a.h, 0) ==
		       HCCL_E_PARA,
	       "offset accepted");
	EXPECT(ohc_zc_region_count() == 0, "refused activations left regions");

	EXPECT(HcclCommActivateCommMemory(comm, a.va, a.size, 0, a.h, 0) ==
		       HCCL_SUCCESS,
	       "activate a");
	EXPECT(HcclCommActivateCommMemory(comm, a.va, a.size, 0, a.h, 0) ==
		       HCCL_E_PARA,
	       "double activation accepted");
	EXPECT(HcclCommActivateCommMemory(comm, b.va, b.size, 0, b.h, 0) ==
		       HCCL_SUCCESS,
	       "activate b");
	EXPECT(HcclCommUnsetMemoryRange(comm, range) == HCCL_E_PARA,
	       "unset with active blocks accepted");
	EXPECT(HcclCommDeactivateCommMemory(comm, (char *)a.va + 4096) ==
		       HCCL_E_PARA,
	       "deactivating inside a block accepted");
	EXPECT(ohc_zc_region_count() == 2, "blocks: %u", ohc_zc_region_count());

	/* in flight: rank 0's op waits for the others, who come late */
	if (rank != 0)
		usleep(300 * 1000);
	EXPECT(!HcclAllReduce(a.va, b.va, 1000, HCCL_DATA_TYPE_INT32,
			      HCCL_REDUCE_SUM, comm, stream),
	       "enqueue");
	if (rank == 0) {
		EXPECT(HcclCommDeactivateCommMemory(comm, a.va) == HCCL_E_AGAIN,
		       "deactivating memory of an op in flight accepted");
		EXPECT(HcclCommDeactivateCommMemory(comm, b.va) == HCCL_E_AGAIN,
		       "deactivating memory of an op in flight accepted");
	}
	EXPECT(!aclrtSynchronizeStream(stream), "sync");
	/* still active and still zero-copy after the refusals (verbs too) */
	s0 = stats_of(comm);
	EXPECT(!HcclAllReduce(a.va, b.va, zc_count(nranks),
			      HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, comm,
			      stream) &&
		       !aclrtSynchronizeStream(stream),
	       "allreduce");
	s1 = stats_of(comm);
	EXPECT(s1.bytes[OHC_PATH_ZC] > s0.bytes[OHC_PATH_ZC] || nranks == 1,
	       "not zero-copy after refused deactivations");

	/* unmapped while active: invalidated, the op falls back, correct */
	EXPECT(HcclCommDeactivateCommMemory(comm, b.va) == HCCL_SUCCESS,
	       "deactivate b");
	pmem_unmap(&a);
	if (pmem_map(&a, range, 4 * MIB))
		return bad + 1;
	s0 = stats_of(comm);
	for (int i = 0; i < 1000; i++)
		((int32_t *)a.va)[i] = rank + i;
	EXPECT(!HcclAllReduce(a.va, a.va, 1000, HCCL_DATA_TYPE_INT32,
			      HCCL_REDUCE_SUM, comm, stream) &&
		       !aclrtSynchronizeStream(stream),
	       "allreduce on remapped memory");
	s1 = stats_of(comm);
	EXPECT(s1.bytes[OHC_PATH_ZC] == s0.bytes[OHC_PATH_ZC],
	       "a stale registration was used");
	for (int i = 0; i < 1000; i++)
		if (((int32_t *)a.va)[i] !=
		    nranks * (nranks - 1) / 2 + nranks * i) {
			FAIL("remapped allreduce[%d] = %d", i,
			     ((int32_t *)a.va)[i]);
			break;
		}
	EXPECT(HcclCommDeactivateCommMemory(comm, a.va) == HCCL_SUCCESS,
	       "deactivate the stale block");
	EXPECT(HcclCommDeactivateCommMemory(comm, a.va) == HCCL_E_PARA,
	       "double deactivation accepted");
	EXPECT(HcclCommUnsetMemoryRange(comm, range) == HCCL_SUCCESS, "unset");
	EXPECT(HcclCommUnsetMemoryRange(comm, range) == HCCL_E_PARA,
	       "double unset accepted");
	EXPECT(ohc_zc_region_count() == 0, "regions left");
	HcclCommDestroy(comm);
	pmem_unmap(&a);
	pmem_unmap(&b);
	pmem_unmap(&c);
	aclrtReleaseMemAddress(range);
	aclrtReleaseMemAddress(other);
	aclrtDestroyStream(stream);
	aclFinalize();
	return bad;
}

Test(zerocopy, misuse_procs2, .timeout = 180)
{
	run_procs(2, misuse_rank);
}

/* ---- windows of thread ranks: peers' addresses are ours ---- */

static HcclComm tcomms[3];
static void *tva[3];

static int window_thread(int rank, int nranks, void *p)
{
	int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
	HcclCommSymWindow win;
	struct pmem m;
	int32_t *peer = NULL, *mine;
	char *range;
	int bad = 0;

	(void)p;
	if (aclrtSetDevice(rank) ||
	    aclrtReserveMemAddress((void **)&range, 2 * MIB, 0, NULL, 1) ||
	    pmem_map(&m, range, 2 * MIB))
		return 1;
	mine = m.va;
	tva[rank] = m.va;
	memset(m.va, 0, 2 * MIB);
	EXPECT(HcclCommSymWinRegister(tcomms[rank], m.va, 2 * MIB, &win, 1) ==
		       HCCL_SUCCESS,
	       "register");
	EXPECT(HcclSymWinGetPeerPointer(win, 64, (uint32_t)right,
					(void **)&peer) == HCCL_SUCCESS &&
		       (char *)peer == (char *)tva[right] + 64,
	       "peer pointer %p, window at %p", (void *)peer, tva[right]);
	for (int i = 0; i < 100 && peer; i++)
		peer[i] = rank * K + i;
	EXPECT(!HcclBarrier(tcomms[rank], NULL), "barrier");
	for (int i = 0; i < 100; i++)
		if (mine[16 + i] != left * K + i) {
			FAIL("window[%d] = %d", i, mine[16 + i]);
			break;
		}
	EXPECT(!HcclBarrier(tcomms[rank], NULL), "barrier");
	EXPECT(HcclCommSymWinDeregister(win) == HCCL_SUCCESS, "deregister");
	pmem_unmap(&m);
	aclrtReleaseMemAddress(range);
	return bad;
}

Test(zerocopy, windows_threads3, .timeout = 120)
{
	int32_t devs[3] = {0, 1, 2};

	cr_assert_eq(aclInit(NULL), 0);
	cr_assert_eq(HcclCommInitAll(3, devs, tcomms), HCCL_SUCCESS);
	cr_assert_eq(ohc_test_thread_ranks(3, window_thread, NULL), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(HcclCommDestroy(tcomms[i]), HCCL_SUCCESS);
	cr_assert_eq(ohc_zc_region_count(), 0);
	aclFinalize();
}
