/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Faults on the wire between two hosts: runs in both VMs of
 * `ci/soft-roce/run-vm.sh --vms 2` (skipped anywhere else), two ranks per
 * VM (shm inside, verbs across), one rank table naming both VMs, the HCCL
 * API driving AllReduce and a Send/Recv ring. White box (links the
 * internal library) only to arm the verbs wrapper's fault seam.
 *
 * - link_down: rank 2 takes its VM's link down mid-run and leaves it down
 *   past the replay budget; every rank fails (HCCL_E_REMOTE or a timeout)
 *   within bounded time, its log names a peer, every process exits; the
 *   link comes back up afterwards.
 * - link_flap_replayed: the link down for 3 s mid-run, then up: the
 *   connections are replayed and every operation succeeds.
 * - qp_error: the next ibv_post_send of rank 1 finds its QP in the error
 *   state (the wrapper's seam); the same, and rank 1's log names the QP's
 *   peer and the flush status.
 * - netem_loss: 5 % packet loss on both VMs' egress (tc netem) while the
 *   collectives run: results stay correct. The rxe counters before and
 *   after go to the log.
 * - slow_setup_record_offered_again: vm0's verbs setup records delayed
 *   past the 2 s a higher rank waits for one: the lower ranks connect
 *   again and the communicator comes up.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "helpers/ohc_test.h"
#include "transport/verbs/vx_wrap.h"

#define PER_VM 2
#define NR (2 * PER_VM)
#define EXEC_TIMEOUT_S 20
#define BOUND_S (EXEC_TIMEOUT_S + 10.0)
#define COUNT (1 << 14)

static char table_path[256];
static int vm_index;
static const char *bad_ip_rank3; /* device_ip override for rank 3 */

/* Skip unless in one of two VMs; write the shared rank table. */
static void two_vms_or_skip(int port)
{
	const char *ip = getenv("OHC_VM_IP"), *peer = getenv("OHC_VM_PEER_IP");
	const char *ips[2], *dev[NR];

	vm_index = ohc_test_vm_ips("OHC_VM_IP", "OHC_VM_PEER_IP", ips);
	if (vm_index < 0 || !getenv("OHC_VM_NETDEV") || strcmp(ip, peer) == 0)
		cr_skip_test("needs two hosts: ci/soft-roce/run-vm.sh --vms 2 "
			     "(qemu mode)");
	for (int r = 0; r < NR; r++)
		dev[r] =
			r == 3 && bad_ip_rank3 ? bad_ip_rank3 : ips[r / PER_VM];
	snprintf(table_path, sizeof(table_path),
		 "/tmp/ohc_two_node_faults_%d.json", (int)getpid());
	cr_assert_eq(ohc_test_write_vm_table(table_path, PER_VM, port, ips, dev,
					     NULL),
		     0, "cannot write %s", table_path);
}

/* stderr into a file while a rank runs, so its log can be checked. */
struct capture {
	int saved, fd;
	char path[64];
};

static void capture_begin(struct capture *c, int rank)
{
	snprintf(c->path, sizeof(c->path), "/tmp/ohc_tnf_r%d_%d.log", rank,
		 (int)getpid());
	c->fd = open(c->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	fflush(stderr);
	c->saved = dup(2);
	if (c->fd >= 0)
		dup2(c->fd, 2);
}

/* Restore stderr, echo the captured log there; the log (malloc'd). */
static char *capture_end(struct capture *c, int rank)
{
	char *log = calloc(1, 65536);
	ssize_t n = c->fd >= 0 ? pread(c->fd, log, 65535, 0) : 0;

	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	if (c->fd >= 0)
		close(c->fd);
	unlink(c->path);
	log[n > 0 ? n : 0] = 0;
	for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n"))
		fprintf(stderr, "[rank %d] %s\n", rank, line);
	/* strtok cut the lines: read back what was printed is not needed;
	 * undo the cuts for the callers' substring checks */
	for (ssize_t i = 0; i < n; i++)
		if (!log[i])
			log[i] = '\n';
	return log;
}

/* ---- faults that must end in an error ------------------------------ */

/* 1 if the log names a rank other than self ("rank N", "peer N"). */
static int names_peer(const char *log, int self)
{
	static const char *const keys[] = {"rank ", "peer "};

	for (unsigned k = 0; k < 2; k++)
		for (const char *p = strstr(log, keys[k]); p;
		     p = strstr(p + 1, keys[k])) {
			char *end;
			long n = strtol(p + 5, &end, 10);

			if (end != p + 5 && n != self && n >= 0 && n < NR)
				return 1;
		}
	return 0;
}

enum fault { F_LINK_DOWN, F_QP_ERROR };

#define LINK_RANK 2 /* takes its VM's link down */
#define QP_RANK 1   /* its next verbs post finds the QP in error */
#define TRIGGER_IT 3

/* Bring the link back and wait until rxe has its GID again. */
static int link_up(void)
{
	const char *dev = getenv("OHC_VM_RDMA_DEV");
	const char *gid = getenv("OHC_VM_GID_INDEX");
	double end = ohc_test_now_s() + 20;

	if (ohc_test_sh("ip link set dev %s up", getenv("OHC_VM_NETDEV")))
		return -1;
	while (ohc_test_now_s() < end) {
		if (ohc_test_sh("grep -q ACTIVE "
				"/sys/class/infiniband/%s/ports/1/state "
				"&& ! grep -q "
				"'^0000:0000:0000:0000:0000:0000:0000:0000' "
				"/sys/class/infiniband/%s/ports/1/gids/%s",
				dev ? dev : "rxe0", dev ? dev : "rxe0",
				gid ? gid : "1") == 0)
			return 0;
		usleep(200000);
	}
	return -1;
}

static int fault_rank(int local, int nlocal, void *arg)
{
	enum fault f = *(enum fault *)arg;
	int rank = vm_index * PER_VM + local, bad = 0;
	HcclResult r = HCCL_SUCCESS, async = HCCL_SUCCESS;
	struct capture cap;
	HcclComm comm;
	double t0 = ohc_test_now_s(), took;
	char *log;
	int it;

	(void)nlocal;
	capture_begin(&cap, rank);
	if (aclrtSetDevice(local) ||
	    HcclCommInitClusterInfo(table_path, (uint32_t)rank, &comm)) {
		free(capture_end(&cap, rank));
		OHC_RANK_FAIL("rank %d: init failed", rank);
	}
	for (it = 0; it < 200 && r == HCCL_SUCCESS; it++) {
		if (it == TRIGGER_IT) {
			t0 = ohc_test_now_s();
			if (f == F_LINK_DOWN && rank == LINK_RANK)
				ohc_test_sh("ip link set dev %s down",
					    getenv("OHC_VM_NETDEV"));
			if (f == F_QP_ERROR && rank == QP_RANK)
				ohc_vx_fault_arm(OHC_VX_POST_SEND, 0,
						 OHC_VX_FAULT_QP_ERR);
		}
		r = ohc_test_ring_round(comm, rank, NR, COUNT);
	}
	took = ohc_test_now_s() - t0;
	HcclGetCommAsyncError(comm, &async);
	fprintf(stderr,
		"rank %d: failed at iteration %d after %.2f s: error %d, "
		"async error %d\n",
		rank, it - 1, took, r, async);
	HcclCommDestroy(comm);
	if (f == F_LINK_DOWN && rank == LINK_RANK && link_up()) {
		fprintf(stderr, "rank %d: link or GID not back\n", rank);
		bad = 1;
	}
	log = capture_end(&cap, rank);
	if (it - 1 < TRIGGER_IT || r == HCCL_SUCCESS) {
		fprintf(stderr, "rank %d: no failure (%d) after the fault\n",
			rank, r);
		bad = 1;
	}
	if (took > BOUND_S) {
		fprintf(stderr, "rank %d: took %.1f s > %.0f s\n", rank, took,
			BOUND_S);
		bad = 1;
	}
	if (async != HCCL_E_REMOTE && async != HCCL_E_TIMEOUT) {
		fprintf(stderr, "rank %d: async error %d\n", rank, async);
		bad = 1;
	}
	/* the peer is named: a connection, a shm peer or an op's peer */
	if (!names_peer(log, rank)) {
		fprintf(stderr, "rank %d: log names no peer\n", rank);
		bad = 1;
	}
	if (f == F_QP_ERROR && rank == QP_RANK &&
	    (!strstr(log, "QP ") || !strstr(log, "Flush"))) {
		fprintf(stderr, "rank %d: log lacks the QP and its status\n",
			rank);
		bad = 1;
	}
	free(log);
	return bad;
}

static void fault_env(void)
{
	char v[16];

	snprintf(v, sizeof(v), "%d", EXEC_TIMEOUT_S);
	setenv("HCCL_EXEC_TIMEOUT", v, 1);
	/* 268 ms x 6 retries: shorter gave spurious "retry counter
	 * exceeded" errors before the fault on these loaded TCG VMs
	 * (measured: 16.8 ms x 3 and 67 ms x 5 both did) */
	setenv("HCCL_RDMA_TIMEOUT", "16", 1);
	setenv("HCCL_RDMA_RETRY_CNT", "6", 1);
	setenv("HCCL_CONNECT_TIMEOUT", "60", 1);
}

Test(two_node_faults, link_down, .timeout = 240)
{
	enum fault f = F_LINK_DOWN;
	double t0 = ohc_test_now_s();

	two_vms_or_skip(21000);
	fault_env();
	ohc_test_fork_settle();
	cr_expect_eq(ohc_test_fork_ranks(PER_VM, fault_rank, &f, 180), 0);
	fprintf(stderr, "vm%d: link_down: %.1f s\n", vm_index,
		ohc_test_now_s() - t0);
	unlink(table_path);
}

Test(two_node_faults, qp_error, .timeout = 240)
{
	enum fault f = F_QP_ERROR;
	double t0 = ohc_test_now_s();

	two_vms_or_skip(22000);
	fault_env();
	ohc_test_fork_settle();
	cr_expect_eq(ohc_test_fork_ranks(PER_VM, fault_rank, &f, 180), 0);
	fprintf(stderr, "vm%d: qp_error: %.1f s\n", vm_index,
		ohc_test_now_s() - t0);
	unlink(table_path);
}

/* ---- a link flap shorter than the replay budget ------------------- */

#define FLAP_S 3 /* longer than the QPs' retry window (268 ms x 6) */

#define DEV_COUNT (1 << 19) /* 2 MiB: landing chunks of 256 KiB */

/*
 * In-place AllReduce on device memory (exported: a reduction into its
 * own destination lands in the receiver's landing buffers when it goes
 * by rendezvous), checked.
 */
static HcclResult dev_allreduce(HcclComm comm, int rank, int32_t *buf)
{
	size_t base = 1000 * (size_t)(NR * (NR - 1) / 2);
	HcclResult r;

	for (size_t i = 0; i < DEV_COUNT; i++)
		buf[i] = (int32_t)(i * 3 + (size_t)rank * 1000);
	r = HcclAllReduce(buf, buf, DEV_COUNT, HCCL_DATA_TYPE_INT32,
			  HCCL_REDUCE_SUM, comm, NULL);
	for (size_t i = 0; i < DEV_COUNT && r == HCCL_SUCCESS; i++)
		if (buf[i] != (int32_t)((size_t)NR * i * 3 + base)) {
			fprintf(stderr,
				"rank %d: device allreduce: [%zu] wrong\n",
				rank, i);
			r = HCCL_E_INTERNAL;
		}
	return r;
}

/*
 * Rank 2 takes its VM's link down for FLAP_S seconds in the background
 * while every rank keeps running AllReduce and Send/Recv rings: the QPs'
 * retries run out and the port goes down, the connections are replayed
 * (OPENHCCL_RDMA_REPLAY_MS, 10 s by default) and every operation still
 * succeeds with the right result; the replays are logged. *arg: run with
 * the rendezvous (from 64 KiB: every send of the rings, and an in-place
 * AllReduce on device memory for the landing buffers), or without.
 */
static int flap_rank(int local, int nlocal, void *arg)
{
	int rank = vm_index * PER_VM + local, bad = 0, it;
	int rdv = *(const int *)arg;
	int32_t *dev = NULL;
	struct capture cap;
	HcclComm comm;
	double t0 = 0;
	char *log;

	(void)nlocal;
	capture_begin(&cap, rank);
	if (aclrtSetDevice(local) ||
	    (rdv && aclrtMalloc((void **)&dev, DEV_COUNT * 4,
				ACL_MEM_MALLOC_HUGE_FIRST)) ||
	    HcclCommInitClusterInfo(table_path, (uint32_t)rank, &comm)) {
		free(capture_end(&cap, rank));
		OHC_RANK_FAIL("rank %d: init failed", rank);
	}
	for (it = 0;; it++) {
		HcclResult r;
		int32_t stop;

		if (it == TRIGGER_IT) {
			t0 = ohc_test_now_s();
			if (rank == LINK_RANK)
				ohc_test_sh("(ip link set dev %s down; "
					    "sleep %d; ip link set dev %s up) "
					    "&",
					    getenv("OHC_VM_NETDEV"), FLAP_S,
					    getenv("OHC_VM_NETDEV"));
		}
		r = ohc_test_ring_round(comm, rank, NR, COUNT * 4 + 3);
		if (r == HCCL_SUCCESS && rdv)
			r = dev_allreduce(comm, rank, dev);
		/* every rank stops after the same iteration: the first whose
		 * time is up says so (each rank's own clock alone let one
		 * destroy its communicator while a peer began one more) */
		stop = t0 && ohc_test_now_s() - t0 >= FLAP_S + 8;
		if (r == HCCL_SUCCESS)
			r = HcclAllReduce(&stop, &stop, 1, HCCL_DATA_TYPE_INT32,
					  HCCL_REDUCE_MAX, comm, NULL);
		if (r != HCCL_SUCCESS) {
			fprintf(stderr,
				"rank %d: iteration %d failed (%d) %.2f s "
				"after the flap began\n",
				rank, it, r, ohc_test_now_s() - t0);
			bad = 1;
			break;
		}
		if (stop)
			break;
	}
	fprintf(stderr,
		"rank %d: %d iterations, the last %.1f s after the "
		"flap began\n",
		rank, it, ohc_test_now_s() - t0);
	HcclCommDestroy(comm);
	if (dev)
		aclrtFree(dev);
	if (rank == LINK_RANK && link_up()) {
		fprintf(stderr, "rank %d: link or GID not back\n", rank);
		bad = 1;
	}
	log = capture_end(&cap, rank);
	if (rank == LINK_RANK && !strstr(log, "back after")) {
		fprintf(stderr, "rank %d: no replay logged\n", rank);
		bad = 1;
	}
	free(log);
	return bad;
}

static void link_flap(int rdv, int port)
{
	double t0 = ohc_test_now_s();

	two_vms_or_skip(port);
	fault_env();
	/* the slot and pulled paths only, or every large send by
	 * rendezvous (direct into the destination, or landing) */
	setenv("OPENHCCL_RDMA_RNDV_KB", rdv ? "64" : "0", 1);
	ohc_test_fork_settle();
	cr_expect_eq(ohc_test_fork_ranks(PER_VM, flap_rank, &rdv, 180), 0);
	fprintf(stderr, "vm%d: link_flap_replayed%s: %.1f s\n", vm_index,
		rdv ? "_rendezvous" : "", ohc_test_now_s() - t0);
	unlink(table_path);
}

Test(two_node_faults, link_flap_replayed, .timeout = 240)
{
	link_flap(0, 24000);
}

Test(two_node_faults, link_flap_replayed_rendezvous, .timeout = 240)
{
	link_flap(1, 24500);
}

/* ---- loss on the wire: results stay correct ------------------------ */

static int loss_rank(int local, int nlocal, void *arg)
{
	static const size_t counts[] = {1, 4099, 65539, 300007};
	int rank = vm_index * PER_VM + local;
	HcclComm comm;
	int bad = 0;

	(void)nlocal;
	(void)arg;
	if (aclrtSetDevice(local) ||
	    HcclCommInitClusterInfo(table_path, (uint32_t)rank, &comm))
		OHC_RANK_FAIL("rank %d: init failed", rank);
	for (int rep = 0; rep < 1; rep++)
		for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]);
		     c++) {
			double t = ohc_test_now_s();
			HcclResult r =
				ohc_test_ring_round(comm, rank, NR, counts[c]);

			fprintf(stderr, "rank %d: count %zu: %d in %.2f s\n",
				rank, counts[c], r, ohc_test_now_s() - t);
			bad |= r != HCCL_SUCCESS;
		}
	bad |= HcclBarrier(comm, NULL) != HCCL_SUCCESS;
	HcclCommDestroy(comm);
	return bad;
}

static void rxe_counters(const char *when)
{
	const char *dev = getenv("OHC_VM_RDMA_DEV");

	ohc_test_sh("cd /sys/class/infiniband/%s/ports/1/hw_counters "
		    "2>/dev/null && "
		    "grep -H . *retry* *seq* *nak* *duplicate* *send_err* "
		    "*completer* 2>/dev/null | tr '\\n' ' ' | sed 's/^/%s: /'; "
		    "echo",
		    dev ? dev : "rxe0", when);
}

Test(two_node_faults, netem_loss, .timeout = 600)
{
	const char *nd, *loss;
	double t0 = ohc_test_now_s();
	int failed;

	two_vms_or_skip(23000);
	/* measured (ci/soft-roce/README.md): whole 64 KiB slots per WRITE
	 * fail with "retry counter exceeded" at 5 % loss, 1-2 KiB writes
	 * pass; a short timeout keeps each lost round short, but 134 ms
	 * (15) once ran out of retries when the host was loaded */
	setenv("OPENHCCL_RDMA_WRITE_KB", "1", 0);
	setenv("HCCL_RDMA_TIMEOUT", "16", 0);
	nd = getenv("OHC_VM_NETDEV");
	loss = getenv("OHC_TEST_LOSS") ? getenv("OHC_TEST_LOSS") : "5%";
	setenv("HCCL_EXEC_TIMEOUT", "300", 1);
	if (strcmp(loss, "0"))
		cr_assert_eq(
			ohc_test_sh("tc qdisc add dev %s root netem loss %s",
				    nd, loss),
			0,
			"tc netem (sch_netem in the VM, tc on the host "
			"root)");
	rxe_counters("before");
	ohc_test_fork_settle();
	failed = ohc_test_fork_ranks(PER_VM, loss_rank, NULL, 540);
	rxe_counters("after");
	if (strcmp(loss, "0")) {
		ohc_test_sh("tc -s qdisc show dev %s | head -3 | tr '\\n' ' '; "
			    "echo",
			    nd);
		ohc_test_sh("tc qdisc del dev %s root", nd);
	}
	fprintf(stderr, "vm%d: netem_loss: %.1f s\n", vm_index,
		ohc_test_now_s() - t0);
	cr_expect_eq(failed, 0);
	unlink(table_path);
}

/* ---- a slow setup record: offered again ----------------------------- */

/*
 * A higher rank waits 2 s for a lower rank's setup record, then drops the
 * connection as a stranger's; the lower rank must then connect again, not
 * fail (seen in CI under netem_loss: TCP retransmitting the record on the
 * lossy wire took longer). Here vm0's TCP segments that carry a verbs
 * setup record (a frame of magic "VX" at the payload's start: 20 bytes of
 * IP header, 32 of TCP with timestamps) pass a netem band that delays them
 * SLOW_RECORD; the filter goes SLOW_WINDOW after that band first holds a
 * packet, so a record offered again afterwards passes. A higher rank that
 * accepts up to 2.5 s after the first record was sent still drops it: the
 * record and its retransmissions are held until 2 s after that accept
 * (the window), and the held ones arrive later still (the delay).
 */
#define SLOW_RECORD "6s"
#define SLOW_WINDOW "4.5"
/* The lifter (NETDEV twice): wait until the band holds a packet, then
 * the window, then remove the filter. */
#define LIFT_SH                                                                \
	"for i in $(seq 2400); do "                                            \
	"tc -s qdisc show dev %s | awk '/netem 30:/ {f = 1} "                  \
	"f && /Sent/ {s = $4} f && /backlog/ {b = $3 + 0; exit} "              \
	"END {exit !(s + b > 0)}' && break; sleep 0.05; done; "                \
	"sleep " SLOW_WINDOW "; tc filter del dev %s parent 1: prio 1"

static char reoffer_mark[64];

static int slow_record_rank(int local, int nlocal, void *arg)
{
	int rank = vm_index * PER_VM + local, bad = 0;
	struct capture cap;
	HcclComm comm;
	char *log;

	(void)nlocal;
	(void)arg;
	capture_begin(&cap, rank);
	if (aclrtSetDevice(local) ||
	    HcclCommInitClusterInfo(table_path, (uint32_t)rank, &comm)) {
		free(capture_end(&cap, rank));
		OHC_RANK_FAIL("rank %d: init failed", rank);
	}
	bad |= ohc_test_ring_round(comm, rank, NR, COUNT) != HCCL_SUCCESS;
	bad |= HcclCommDestroy(comm) != HCCL_SUCCESS;
	log = capture_end(&cap, rank);
	if (strstr(log, "connecting again")) {
		int fd = open(reoffer_mark, O_WRONLY | O_CREAT | O_CLOEXEC,
			      0600);

		if (fd >= 0)
			close(fd);
	}
	free(log);
	return bad;
}

/* vm0: the delay band, the filter, and a child that lifts the filter. */
static pid_t slow_records_begin(const char *nd)
{
	pid_t pid;

	cr_assert_eq(
		ohc_test_sh("tc qdisc add dev %s root handle 1: prio bands 3 "
			    "priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 && "
			    "tc qdisc add dev %s parent 1:3 handle 30: netem "
			    "delay %s && "
			    "tc filter add dev %s parent 1: protocol ip prio 1 "
			    "u32 match ip protocol 6 0xff "
			    "match u16 0x5658 0xffff at 52 flowid 1:3",
			    nd, nd, SLOW_RECORD, nd),
		0, "tc prio, netem and u32 (sch_prio, cls_u32 in the VM)");
	pid = fork();
	cr_assert_geq(pid, 0, "fork");
	/* its own process group (set on both sides, whichever runs
	 * first), so that its shell is killed with it */
	if (pid > 0)
		(void)setpgid(pid, pid);
	if (pid == 0)
		_exit(setpgid(0, 0) ? 1 : ohc_test_sh(LIFT_SH, nd, nd));
	return pid;
}

Test(two_node_faults, slow_setup_record_offered_again, .timeout = 240)
{
	const char *nd = getenv("OHC_VM_NETDEV");
	double t0 = ohc_test_now_s();
	pid_t lifter = -1;
	int failed;

	two_vms_or_skip(26000);
	snprintf(reoffer_mark, sizeof(reoffer_mark), "/tmp/ohc_reoffer_%d",
		 (int)getpid());
	unlink(reoffer_mark);
	if (vm_index == 0)
		lifter = slow_records_begin(nd);
	ohc_test_fork_settle();
	failed = ohc_test_fork_ranks(PER_VM, slow_record_rank, NULL, 180);
	if (lifter > 0) {
		kill(-lifter, SIGKILL);
		waitpid(lifter, NULL, 0);
		ohc_test_sh("tc -s qdisc show dev %s | tr '\\n' ' '; echo", nd);
		ohc_test_sh("tc qdisc del dev %s root", nd);
	}
	fprintf(stderr, "vm%d: slow_setup_record_offered_again: %.1f s\n",
		vm_index, ohc_test_now_s() - t0);
	cr_expect_eq(failed, 0);
	/* vm0's ranks are the lower ones: one of them connected again */
	if (vm_index == 0)
		cr_expect_eq(access(reoffer_mark, F_OK), 0,
			     "no rank of vm0 offered its record again");
	unlink(reoffer_mark);
	unlink(table_path);
}

/* ---- bad input: a device_ip no RDMA device has --------------------- */

#define BAD_IP "192.0.2.250" /* on the wire's subnet, on no host */

static int bad_ip_rank(int local, int nlocal, void *arg)
{
	int rank = vm_index * PER_VM + local, bad = 0;
	struct capture cap;
	HcclComm comm = NULL;
	HcclResult r;
	double t0 = ohc_test_now_s(), took;
	char *log;

	(void)nlocal;
	(void)arg;
	capture_begin(&cap, rank);
	r = aclrtSetDevice(local) ? HCCL_E_INTERNAL
				  : HcclCommInitClusterInfo(
					    table_path, (uint32_t)rank, &comm);
	took = ohc_test_now_s() - t0;
	if (r == HCCL_SUCCESS)
		HcclCommDestroy(comm);
	log = capture_end(&cap, rank);
	fprintf(stderr, "rank %d: init gave %d after %.1f s\n", rank, r, took);
	if (r == HCCL_SUCCESS || took > 45) {
		fprintf(stderr, "rank %d: init should fail fast\n", rank);
		bad = 1;
	}
	/* rank 3 says why (its device_ip), the others name rank 3 */
	if (rank == 3 && !strstr(log, "device_ip " BAD_IP)) {
		fprintf(stderr, "rank 3: log does not name the device_ip\n");
		bad = 1;
	}
	if (rank != 3 && !strstr(log, "rank 3") &&
	    !strstr(log, "did not answer: 3")) {
		fprintf(stderr, "rank %d: log does not name rank 3\n", rank);
		bad = 1;
	}
	free(log);
	return bad;
}

Test(two_node_faults, device_ip_without_rdma_device, .timeout = 240)
{
	bad_ip_rank3 = BAD_IP;
	two_vms_or_skip(24000);
	/* the same-host peer of rank 3 waits for it this long (shm) */
	setenv("HCCL_CONNECT_TIMEOUT", "20", 1);
	ohc_test_fork_settle();
	cr_expect_eq(ohc_test_fork_ranks(PER_VM, bad_ip_rank, NULL, 180), 0);
	unlink(table_path);
}
