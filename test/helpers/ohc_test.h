/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TEST_HELPERS_H
#define OHC_TEST_HELPERS_H

/*
 * Helpers for multi-rank tests: run N ranks as forked processes or as
 * threads, and generate per-rank inputs with exactly known reductions for
 * every HCCL data type and reduce op.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <hccl/hccl.h>

/* A rank body returns 0 on success, anything else is a failure. */
typedef int (*ohc_test_rank_fn)(int rank, int nranks, void *arg);

/*
 * Fork nranks children running fn(rank, nranks, arg) and _exit()ing with
 * its result; wait for all of them at most timeout_s seconds (then kill
 * them all). Returns the number of ranks that failed, crashed or hung.
 */
int ohc_test_fork_ranks(int nranks, ohc_test_rank_fn fn, void *arg,
			int timeout_s);

/*
 * Kill the ranks of pids still running (pid != 0), reaping each and
 * zeroing its entry; the number killed. Each is named on stderr, after
 * its flight recorder dump when OPENHCCL_FLIGHT_SIGNAL names a signal and
 * every thread's stack (gdb) when OHC_TEST_HANG_BT is set.
 */
int ohc_test_kill_hung(pid_t *pids, int nranks);

/* Wait until the test runner's own threads are quiet before fork(). */
void ohc_test_fork_settle(void);

/* Same with threads; returns the number of failed ranks. */
int ohc_test_thread_ranks(int nranks, ohc_test_rank_fn fn, void *arg);

/*
 * For a thread rank of comm (device rank): nops one-element int32 sum
 * AllReduces, slot i sending i * mult + rank, all enqueued on a new stream
 * before one synchronize, then every slot checked. Returns the number of
 * failures (the first wrong slot is printed).
 */
int ohc_test_slot_allreduces(HcclComm comm, int rank, int nranks, int nops,
			     int mult);

/*
 * For ranks forked by ohc_test_fork_ranks: rank 0 makes nroots root infos
 * (HcclGetRootInfo) in memory shared with the others (MAP_SHARED), then
 * sets *ready; the others wait for it at most timeout_s seconds. Making
 * them in the test process before the fork is unsafe: each starts a root
 * server thread, and a lock such a thread holds at fork time (malloc's,
 * under ASan) stays held forever in the children. Returns 0 on success.
 */
int ohc_test_share_roots(HcclRootInfo *roots, int nroots, int *ready, int rank,
			 int timeout_s);

/*
 * For rank functions (forked or threads; no Criterion calls there): print
 * a line and return 1 from the rank function; check an HCCL return code.
 */
#define OHC_RANK_FAIL(...)                                                     \
	do {                                                                   \
		fprintf(stderr, __VA_ARGS__);                                  \
		fprintf(stderr, "\n");                                         \
		return 1;                                                      \
	} while (0)

#define OHC_RANK_CHECK_RET(rank, call, want)                                   \
	do {                                                                   \
		HcclResult _r = (call);                                        \
		if (_r != (want))                                              \
			OHC_RANK_FAIL("rank %d: %s:%d: %s returned %d, want "  \
				      "%d",                                    \
				      (int)(rank), __FILE__, __LINE__, #call,  \
				      (int)_r, (int)(want));                   \
	} while (0)

/* Path of a tool built in this tree (e.g. "doctor/hccl_doctor"); asserts. */
const char *ohc_test_tool_path(const char *rel);

/* Every (dtype, op) pair HCCL allows for reductions (spec 2.3). */
struct ohc_test_pair {
	HcclDataType dtype;
	HcclReduceOp op;
};
extern const struct ohc_test_pair ohc_test_reduce_pairs[];
extern const size_t ohc_test_nreduce_pairs;

size_t ohc_test_dtype_size(HcclDataType dtype);
const char *ohc_test_dtype_name(HcclDataType dtype);

/* Fill buf with rank's input for (dtype, op): values whose reduction over
 * any number of ranks up to 8 is exact in the type (or wraps, for ints). */
void ohc_test_fill(void *buf, HcclDataType dtype, HcclReduceOp op, int rank,
		   size_t count, uint64_t salt);

/* Compute the expected reduction over nranks of ohc_test_fill inputs. */
void ohc_test_expect(void *buf, HcclDataType dtype, HcclReduceOp op, int nranks,
		     size_t count, uint64_t salt);

/* Elements [first, first + count) of that reduction, into buf[0..count). */
void ohc_test_expect_at(void *buf, HcclDataType dtype, HcclReduceOp op,
			int nranks, size_t first, size_t count, uint64_t salt);

/* Index of the first differing element, or -1. */
long ohc_test_compare(const void *got, const void *want, HcclDataType dtype,
		      size_t count);

/*
 * Seed of a randomized test: $OHC_TEST_SEED if set, else fresh from the
 * clock. Printed on stderr with what, so any failure can be replayed.
 */
uint64_t ohc_test_seed(const char *what);

/*
 * The "large" element count of the end-to-end suites: 1M+3, or
 * $OHC_TEST_BIG_COUNT (slow emulated runs such as the Soft-RoCE VM lower
 * it; it stays odd-sized so fragments do not line up).
 */
uint64_t ohc_test_big_count(void);

/*
 * Inside one of the two VMs of `ci/soft-roce/run-vm.sh --vms 2`: write to
 * path a rank table of two servers (server i is VM i, its host_ip and
 * every device_ip the VM's address) with per_vm ranks each (VM i holds
 * ranks i * per_vm ..; host_port = port + rank) and return this VM's
 * index, 0 or 1. Returns -1 outside two VMs (OHC_VM_COUNT != 2) or when
 * the file cannot be written. Keep port + ranks below 32768, Linux's
 * default ephemeral range: a connection's local port there can hold the
 * root's port (seen: "every port of port 37000 is in use").
 */
int ohc_test_two_vm_table(const char *path, int per_vm, int port);

/*
 * One round on comm (nranks ranks): an int32 AllReduce of count elements,
 * then a ring of Send to rank + 1 / Recv from rank - 1 (even ranks send
 * first); both results checked. HCCL_SUCCESS, the call's error, or
 * HCCL_E_INTERNAL for a wrong result (logged with rank and index).
 */
HcclResult ohc_test_ring_round(HcclComm comm, int rank, int nranks,
			       size_t count);

/* Seconds on the monotonic clock. */
double ohc_test_now_s(void);

/* Run the shell command built from fmt (logged to stderr); its status. */
int ohc_test_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The two addresses of the VM pair from the variables ip_var (this VM's)
 * and peer_var (the other's): ips[i] is VM i's. Returns this VM's index,
 * or -1 outside two VMs or when either variable is unset or empty.
 */
int ohc_test_vm_ips(const char *ip_var, const char *peer_var,
		    const char *ips[2]);

/*
 * The rank table of ohc_test_two_vm_table with the addresses given:
 * host_ip[i] for VM i, device_ip[r] and, unless backup_ip is NULL,
 * backup_device_ip backup_ip[r] for rank r. 0, or -1 if not written.
 */
int ohc_test_write_vm_table(const char *path, int per_vm, int port,
			    const char *const host_ip[2],
			    const char *const *device_ip,
			    const char *const *backup_ip);

/* Entries of /dev/shm whose name mentions ohc or hccl. */
int ohc_test_shm_leftovers(void);
/* Open file descriptors of this process. */
int ohc_test_count_fds(void);
/* kB of field ("Rss", "AnonHugePages", ...) in /proc/self/smaps for the
 * mapping that holds addr; -1 when nothing is mapped there. */
long ohc_test_smaps_kb(const void *addr, const char *field);

#endif
