/* SPDX-License-Identifier: Apache-2.0 */
/*
 * "Device" and host memory: page-aligned anonymous mappings placed on the
 * current device's NUMA node (preferred policy, so allocation never fails
 * for lack of a node or of huge pages), tracked by start address so that
 * free knows the length and refuses foreign pointers. Copies and sets:
 * plain memmove/memset; the async variants run on the stream's worker.
 *
 * Device allocations of OPENHCCL_MALLOC_SHARED_KB (256) and more are shared
 * mappings of a memfd instead (ohc_rt_mem_info): a peer process on the
 * node can then map the buffer and copy a message straight out of it
 * (the shm transport's implicit zero copy), one copy where the ring
 * takes two. Unlike a private mapping, such a buffer is shared with a
 * child forked later, not copied. If the memfd cannot be made (out of fds,
 * say) the allocation is anonymous as usual.
 */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "runtime/rt_internal.h"
#include "util/config.h"

enum mem_kind { MEM_DEVICE, MEM_HOST };

struct mem_block {
	uintptr_t base;
	size_t size; /* mapped length (page multiple) */
	enum mem_kind kind;
	int fd;	     /* the memfd of a shared allocation, else -1 */
	uint64_t id; /* shared: unique in the process, never reused */
};

static uint64_t next_shared_id = 1; /* mem_lock */
static unsigned shared_live;	    /* shared blocks (memfds open); mem_lock */

/* Sorted by base; mem_lock. */
static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mem_block *blocks;
static size_t nblocks, cap_blocks;

/* Index of the last block with base <= p, or -1. mem_lock held. */
static long block_floor_locked(uintptr_t p)
{
	size_t lo = 0, hi = nblocks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (blocks[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

static int block_insert(uintptr_t base, size_t size, enum mem_kind kind, int fd)
{
	struct mem_block *nb;
	long at;

	pthread_mutex_lock(&mem_lock);
	if (nblocks == cap_blocks) {
		size_t ncap = cap_blocks ? cap_blocks * 2 : 64;

		nb = realloc(blocks, ncap * sizeof(*nb));
		if (!nb) {
			pthread_mutex_unlock(&mem_lock);
			return -1;
		}
		blocks = nb;
		cap_blocks = ncap;
	}
	at = block_floor_locked(base) + 1;
	memmove(&blocks[at + 1], &blocks[at],
		(nblocks - (size_t)at) * sizeof(*blocks));
	blocks[at] = (struct mem_block){base, size, kind, fd,
					fd >= 0 ? next_shared_id++ : 0};
	nblocks++;
	pthread_mutex_unlock(&mem_lock);
	return 0;
}

/* Index of the block holding all of [p, p + len), or -1. mem_lock held. */
static long block_holding_locked(uintptr_t p, size_t len)
{
	long i = block_floor_locked(p);

	if (i >= 0 && p - blocks[i].base < blocks[i].size &&
	    len <= blocks[i].size - (p - blocks[i].base))
		return i;
	return -1;
}

OHC_API int ohc_rt_mem_info(const void *ptr, size_t len,
			    struct ohc_rt_mem_info *info_p)
{
	uintptr_t p = (uintptr_t)ptr;
	int ret = -1;
	long i;

	pthread_mutex_lock(&mem_lock);
	i = block_holding_locked(p, len);
	if (i >= 0 && blocks[i].fd >= 0) {
		info_p->fd = blocks[i].fd;
		info_p->offset = p - blocks[i].base;
		info_p->size = blocks[i].size;
		info_p->id = blocks[i].id;
		ret = 0;
	}
	pthread_mutex_unlock(&mem_lock);
	return ret;
}

bool ohc_rt_mem_is_pinned(const void *ptr, size_t len)
{
	bool ok;

	pthread_mutex_lock(&mem_lock);
	ok = block_holding_locked((uintptr_t)ptr, len) >= 0;
	pthread_mutex_unlock(&mem_lock);
	return ok || ohc_rt_vmm_is_mapped(ptr, len);
}

void ohc_rt_mem_bind(void *addr, size_t len, int node)
{
	unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {0};
	const unsigned long bits = 8 * sizeof(mask);

	if (node < 0 || (unsigned long)node >= bits - 1 ||
	    !ohc_rt_numa_usable() || ohc_rt_numa_node_count() <= 1)
		return;
	mask[node / (8 * sizeof(unsigned long))] |=
		1ul << (node % (8 * sizeof(unsigned long)));
	if (mbind(addr, len, MPOL_PREFERRED, mask, bits, 0) != 0)
		OHC_DEBUG(OHC_SS_RT, "mbind of %zu bytes to numa node %d: %s",
			  len, node, strerror(errno));
}

/*
 * Each shared allocation keeps a memfd open: at most a quarter of the fd
 * limit (and 4096) of them at once, so the application's own files and
 * sockets never run out because of us; past that, allocations are private.
 */
static int shared_slot_take(void)
{
	static unsigned cap;
	int ok;

	pthread_mutex_lock(&mem_lock);
	if (!cap) {
		struct rlimit rl;

		cap = getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
				      rl.rlim_cur != RLIM_INFINITY
			      ? (unsigned)OHC_MIN(rl.rlim_cur / 4, 4096)
			      : 4096;
		cap = OHC_MAX(cap, 1u);
	}
	ok = shared_live < cap;
	shared_live += ok;
	pthread_mutex_unlock(&mem_lock);
	return ok;
}

/* Close a shared allocation's memfd (if made) and give its slot back. */
static void shared_release(int fd)
{
	if (fd >= 0)
		close(fd);
	pthread_mutex_lock(&mem_lock);
	shared_live--;
	pthread_mutex_unlock(&mem_lock);
}

/* A shared mapping of a new memfd of len bytes, or MAP_FAILED. */
static void *map_shared(size_t len, int *fd_p)
{
	int fd;
	void *p;

	if (!shared_slot_take())
		return MAP_FAILED;
	/* Sealed at its size: a peer that maps it (zero-copy) can trust
	 * that it never shrinks under its reads. */
	fd = memfd_create("ohc-device-mem", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t)len) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) ||
	    (p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) ==
		    MAP_FAILED) {
		OHC_DEBUG(OHC_SS_RT,
			  "shared memory of %zu bytes: %s; allocating it "
			  "private",
			  len, strerror(errno));
		shared_release(fd);
		return MAP_FAILED;
	}
	*fd_p = fd;
	return p;
}

static aclError mem_alloc(const char *fn, void **ptr_p, size_t size,
			  enum mem_kind kind)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len;
	size_t shared_min = (size_t)ohc_env()->malloc_shared_kb << 10;
	int fd = -1;
	void *p;

	if (!ptr_p)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: output pointer is NULL", fn);
	if (size == 0)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM, "%s: size is 0",
				   fn);
	if (size > SIZE_MAX - page)
		return OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				   "%s: size %zu too large", fn, size);
	len = OHC_ALIGN_UP(size, page);
	p = MAP_FAILED;
	if (kind == MEM_DEVICE && shared_min && len >= shared_min)
		p = map_shared(len, &fd);
	if (p == MAP_FAILED)
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				   "%s: mmap of %zu bytes: %s", fn, len,
				   strerror(errno));
	ohc_rt_mem_bind(p, len, ohc_rt_current_numa_node());
	if (block_insert((uintptr_t)p, len, kind, fd)) {
		munmap(p, len);
		if (fd >= 0)
			shared_release(fd);
		return OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				   "%s: out of memory tracking %zu bytes", fn,
				   len);
	}
	*ptr_p = p;
	return ACL_SUCCESS;
}

static aclError mem_free(const char *fn, void *ptr, enum mem_kind kind)
{
	struct mem_block b;
	long i;

	if (!ptr)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: pointer is NULL", fn);
	pthread_mutex_lock(&mem_lock);
	i = block_floor_locked((uintptr_t)ptr);
	if (i < 0 || blocks[i].base != (uintptr_t)ptr) {
		pthread_mutex_unlock(&mem_lock);
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: %p is not the start of a live "
				   "allocation",
				   fn, ptr);
	}
	if (blocks[i].kind != kind) {
		pthread_mutex_unlock(&mem_lock);
		return OHC_RT_FAIL(
			ACL_ERROR_INVALID_PARAM, "%s: %p came from %s", fn, ptr,
			kind == MEM_DEVICE ? "aclrtMallocHost (use "
					     "aclrtFreeHost)"
					   : "aclrtMalloc (use aclrtFree)");
	}
	b = blocks[i];
	memmove(&blocks[i], &blocks[i + 1],
		(nblocks - (size_t)i - 1) * sizeof(*blocks));
	nblocks--;
	pthread_mutex_unlock(&mem_lock);
	if (b.fd >= 0)
		shared_release(b.fd);
	if (munmap((void *)b.base, b.size) != 0)
		return OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_FREE,
				   "%s: munmap(%p, %zu): %s", fn, ptr, b.size,
				   strerror(errno));
	return ACL_SUCCESS;
}

/* The policy is ignored: huge-page-only requests get normal pages too. */
OHC_API aclError aclrtMalloc(void **devPtr, size_t size,
			     aclrtMemMallocPolicy policy)
{
	(void)policy;
	return mem_alloc("aclrtMalloc", devPtr, size, MEM_DEVICE);
}

OHC_API aclError aclrtMallocAlign32(void **devPtr, size_t size,
				    aclrtMemMallocPolicy policy)
{
	(void)policy;
	return mem_alloc("aclrtMallocAlign32", devPtr, size, MEM_DEVICE);
}

OHC_API aclError aclrtFree(void *devPtr)
{
	return mem_free("aclrtFree", devPtr, MEM_DEVICE);
}

OHC_API aclError aclrtMallocHost(void **hostPtr, size_t size)
{
	return mem_alloc("aclrtMallocHost", hostPtr, size, MEM_HOST);
}

OHC_API aclError aclrtFreeHost(void *hostPtr)
{
	return mem_free("aclrtFreeHost", hostPtr, MEM_HOST);
}

/* MemTotal and MemAvailable of /proc/meminfo in bytes; -1 if unreadable. */
static int read_meminfo(size_t *free_p, size_t *total_p)
{
	unsigned long long total = 0, avail = 0, v;
	int found = 0;
	char line[256];
	FILE *f;

	f = fopen("/proc/meminfo", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemTotal: %llu kB", &v) == 1) {
			total = v;
			found |= 1;
		} else if (sscanf(line, "MemAvailable: %llu kB", &v) == 1) {
			avail = v;
			found |= 2;
		}
	}
	fclose(f);
	if (found != 3)
		return -1;
	*free_p = (size_t)(avail * 1024);
	*total_p = (size_t)(total * 1024);
	return 0;
}

/*
 * Free/total memory the current device can use: its NUMA node's when the
 * machine has several nodes, else the host's available/total memory.
 */
OHC_API aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total)
{
	struct ohc_rt_device *d;
	struct sysinfo si;
	long long node_total, node_free = 0;
	int node;

	if (!free || !total)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtGetMemInfo: NULL output pointer");
	if ((unsigned)attr > ACL_MEM_P2P_HUGE1G)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtGetMemInfo: unknown memory attribute "
				   "%d",
				   (int)attr);
	d = ohc_rt_device_current();
	if (!d)
		return OHC_RT_FAIL(ACL_ERROR_RT_CONTEXT_NULL,
				   "aclrtGetMemInfo: no device set on this "
				   "thread");
	if (ohc_rt_numa_usable() && ohc_rt_numa_node_count() > 1) {
		node = ohc_rt_device_numa_node(d->id);
		node_total = numa_node_size64(node, &node_free);
		if (node_total > 0 && node_free >= 0) {
			*free = (size_t)node_free;
			*total = (size_t)node_total;
			return ACL_SUCCESS;
		}
	}
	if (read_meminfo(free, total) == 0)
		return ACL_SUCCESS;
	if (sysinfo(&si) != 0)
		return OHC_RT_FAIL(ACL_ERROR_RT_INTERNAL_ERROR,
				   "aclrtGetMemInfo: sysinfo: %s",
				   strerror(errno));
	*free = (size_t)si.freeram * si.mem_unit;
	*total = (size_t)si.totalram * si.mem_unit;
	return ACL_SUCCESS;
}

/* ---- copy and set ---- */

/* The upstream check order: count 0, NULLs, kind, destMax, dst == src.
 * Returns 1 (and *ret_p = 0) when there is nothing to copy. */
static int memcpy_check(const char *fn, void *dst, size_t destMax,
			const void *src, size_t count, aclrtMemcpyKind kind,
			aclError *ret_p)
{
	*ret_p = ACL_SUCCESS;
	if (count == 0)
		return 1;
	if (!dst || !src) {
		*ret_p = OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM, "%s: %s is NULL",
				     fn, !dst ? "dst" : "src");
		return 1;
	}
	if ((unsigned)kind > ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE) {
		*ret_p = OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				     "%s: copy kind %d not supported (0..5)",
				     fn, (int)kind);
		return 1;
	}
	if (destMax == 0 || count > destMax) {
		*ret_p = OHC_RT_FAIL(ACL_ERROR_RT_PARAM_INVALID,
				     "%s: count %zu exceeds destMax %zu", fn,
				     count, destMax);
		return 1;
	}
	return dst == src;
}

/* Synchronous for the host; does not synchronize any stream. */
OHC_API aclError aclrtMemcpy(void *dst, size_t destMax, const void *src,
			     size_t count, aclrtMemcpyKind kind)
{
	aclError ret;

	if (memcpy_check("aclrtMemcpy", dst, destMax, src, count, kind, &ret))
		return ret;
	memmove(dst, src, count);
	return ACL_SUCCESS;
}

static aclError memset_check(const char *fn, void *ptr, size_t maxCount,
			     size_t count, int *skip_p)
{
	*skip_p = 1;
	if (count == 0)
		return ACL_SUCCESS;
	if (!ptr)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: devPtr is NULL", fn);
	if (count > maxCount)
		return OHC_RT_FAIL(ACL_ERROR_RT_PARAM_INVALID,
				   "%s: count %zu exceeds maxCount %zu", fn,
				   count, maxCount);
	*skip_p = 0;
	return ACL_SUCCESS;
}

OHC_API aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value,
			     size_t count)
{
	aclError ret;
	int skip;

	ret = memset_check("aclrtMemset", devPtr, maxCount, count, &skip);
	if (!skip)
		memset(devPtr, value, count);
	return ret;
}

struct mem_task {
	struct ohc_rt_task super;
	void *dst;
	const void *src; /* NULL: a memset of value */
	size_t count;
	int value;
};

static int mem_task_run(struct ohc_rt_task *t)
{
	struct mem_task *mt = ohc_container_of(t, struct mem_task, super);

	if (mt->src)
		memmove(mt->dst, mt->src, mt->count);
	else
		memset(mt->dst, mt->value, mt->count);
	return 0;
}

static void mem_task_describe(const struct ohc_rt_task *t,
			      struct ohc_rt_prof_rec *rec)
{
	const struct mem_task *mt =
		(const struct mem_task *)((const char *)t -
					  offsetof(struct mem_task, super));

	rec->bytes = mt->count;
}

static void mem_task_release(struct ohc_rt_task *t)
{
	free(ohc_container_of(t, struct mem_task, super));
}

/*
 * Queue a copy/set on stream. A copy touching memory the runtime did not
 * hand out (pageable memory) completes before the call returns, still in
 * stream order, as upstream does.
 */
static aclError mem_enqueue(const char *fn, aclrtStream stream, void *dst,
			    const void *src, size_t count, int value)
{
	struct ohc_rt_stream *s;
	struct mem_task *mt;
	uint64_t seq = 0;
	bool wait;
	aclError ret;

	ret = ohc_rt_stream_get(stream, &s);
	if (ret)
		return ret;
	mt = calloc(1, sizeof(*mt));
	if (!mt) {
		ret = OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				  "%s: out of memory", fn);
		goto out_put;
	}
	mt->super.run = mem_task_run;
	mt->super.release = mem_task_release;
	mt->super.describe = mem_task_describe;
	mt->super.name = src ? "memcpy" : "memset";
	mt->dst = dst;
	mt->src = src;
	mt->count = count;
	mt->value = value;
	wait = src && (!ohc_rt_mem_is_pinned(dst, count) ||
		       !ohc_rt_mem_is_pinned(src, count));
	ret = ohc_rt_stream_push(s, &mt->super, &seq);
	if (ret) {
		free(mt);
		goto out_put;
	}
	if (wait)
		ohc_rt_stream_wait_seq(s, seq, OHC_DEADLINE_NEVER);
out_put:
	ohc_rt_stream_put(s);
	return ret;
}

OHC_API aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src,
				  size_t count, aclrtMemcpyKind kind,
				  aclrtStream stream)
{
	aclError ret;

	if (memcpy_check("aclrtMemcpyAsync", dst, destMax, src, count, kind,
			 &ret))
		return ret;
	return mem_enqueue("aclrtMemcpyAsync", stream, dst, src, count, 0);
}

OHC_API aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value,
				  size_t count, aclrtStream stream)
{
	aclError ret;
	int skip;

	ret = memset_check("aclrtMemsetAsync", devPtr, maxCount, count, &skip);
	if (skip)
		return ret;
	return mem_enqueue("aclrtMemsetAsync", stream, devPtr, NULL, count,
			   value);
}
