/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HcclCommWorkingDevNicSet for real: runs in both VMs of
 * `ci/soft-roce/run-vm.sh --vms 2 --nics 2` (skipped anywhere else), two
 * ranks per VM (shm inside, verbs across), a rank table giving every rank
 * device_ip = its VM's eth0 address (rxe0) and backup_device_ip = its eth1
 * address (rxe1). White box (links the internal library) only to count
 * live MRs.
 *
 * Every rank switches, not only some: the two wires are separate subnets
 * (192.0.2.0/24, 192.0.3.0/24) with no route between them, so both ends
 * of a pair must be on the same wire.
 *
 * AllReduce + a Send/Recv ring before; every rank switches to its backup
 * NIC; the same ops after, with rxe1's sent packets growing and rxe0's
 * not; VM 1 takes eth0 down and the ops still complete; a switch back to
 * the primary NICs now fails on every rank (connection setup over the down
 * link, bounded by HCCL_CONNECT_TIMEOUT) and changes nothing: the ops
 * still complete on rxe1; eth0 comes back, every
 * rank switches back, and the traffic is on rxe0 again. The bootstrap
 * (host_ip) runs over eth1, as a management network would stay up. No MR is
 * left after destroy, no fd either.
 *
 * bad_backup: rank 3's backup_device_ip is on no RDMA device; switching it
 * fails with HCCL_E_PARA on every rank, rank 3's log names its IP, and
 * the communicator keeps working on the primary NICs.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "helpers/ohc_test.h"
#include "transport/verbs/vx_wrap.h"

#define PER_VM 2
#define NR (2 * PER_VM)
#define COUNT 65539 /* Send/Recv by rendezvous, AllReduce pieces by slots */
#define ROUNDS 3

static char table_path[256];
static int vm_index;
static const char *bad_backup_rank3; /* backup_device_ip override */

#define BAD_IP "192.0.3.250" /* on eth1's subnet, on no host */

/* Skip unless in one of two VMs with two NICs; write the rank table. */
static void two_nics_or_skip(int port)
{
	const char *ips[2], *ips2[2], *dev[NR], *backup[NR];

	vm_index = ohc_test_vm_ips("OHC_VM_IP", "OHC_VM_PEER_IP", ips);
	if (vm_index < 0 ||
	    ohc_test_vm_ips("OHC_VM_IP2", "OHC_VM_PEER_IP2", ips2) < 0 ||
	    !getenv("OHC_VM_NETDEV"))
		cr_skip_test("needs two hosts with two NICs each: "
			     "ci/soft-roce/run-vm.sh --vms 2 --nics 2");
	/* Send/Recv by rendezvous (the NICs' default; off on rxe unset) */
	setenv("OPENHCCL_RDMA_RNDV_KB", "256", 1);
	for (int r = 0; r < NR; r++) {
		dev[r] = ips[r / PER_VM];
		backup[r] = r == 3 && bad_backup_rank3 ? bad_backup_rank3
						       : ips2[r / PER_VM];
	}
	snprintf(table_path, sizeof(table_path), "/tmp/ohc_nic_switch_%d.json",
		 (int)getpid());
	/* host_ip on eth1: the bootstrap outlives eth0 going down */
	cr_assert_eq(ohc_test_write_vm_table(table_path, PER_VM, port, ips2,
					     dev, backup),
		     0, "cannot write %s", table_path);
}

/* Packets rxe device dev has sent (its hw counter), or -1. */
static long long sent_pkts(const char *dev)
{
	char path[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/sent_pkts", dev);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int rounds(HcclComm comm, int rank, const char *what)
{
	double t = ohc_test_now_s();

	for (int i = 0; i < ROUNDS; i++) {
		HcclResult r = ohc_test_ring_round(comm, rank, NR, COUNT);

		if (r != HCCL_SUCCESS) {
			fprintf(stderr, "rank %d: %s: round %d failed: %d\n",
				rank, what, i, r);
			return 1;
		}
	}
	fprintf(stderr, "rank %d: %s: %d rounds in %.2f s\n", rank, what,
		ROUNDS, ohc_test_now_s() - t);
	return 0;
}

/* Switch every rank to (backup) and run rounds; on local rank 0, check
 * that rxe1 (backup) or rxe0 (primary) carried them and the other not. */
static int switch_and_run(HcclComm comm, int rank, int local, bool backup,
			  const char *what)
{
	const char *on = backup ? getenv("OHC_VM_RDMA_DEV2") : "rxe0";
	const char *off = backup ? "rxe0" : getenv("OHC_VM_RDMA_DEV2");
	uint32_t ranks[NR] = {0, 1, 2, 3};
	bool flags[NR];
	long long on0, off0, on1, off1;
	double t = ohc_test_now_s();
	HcclResult r;
	int bad = 0;

	for (int i = 0; i < NR; i++)
		flags[i] = backup;
	r = HcclCommWorkingDevNicSet(comm, ranks, flags, NR);
	fprintf(stderr, "rank %d: switch to %s: %d in %.2f s\n", rank,
		backup ? "backup" : "primary", r, ohc_test_now_s() - t);
	if (r != HCCL_SUCCESS)
		return 1;
	on0 = sent_pkts(on);
	off0 = sent_pkts(off);
	bad |= rounds(comm, rank, what);
	on1 = sent_pkts(on);
	off1 = sent_pkts(off);
	if (local == 0) {
		fprintf(stderr,
			"vm%d: %s: %s sent %lld packets, %s sent %lld\n",
			vm_index, what, on, on1 - on0, off, off1 - off0);
		if (on0 < 0 || off0 < 0 || on1 - on0 < 100 || off1 - off0 > 0) {
			fprintf(stderr, "vm%d: %s: traffic not on %s only\n",
				vm_index, what, on);
			bad = 1;
		}
	}
	return bad;
}

/*
 * Switching back to the primary NICs while VM 1's eth0 is down fails on
 * every rank within HCCL_CONNECT_TIMEOUT (rxe0 keeps the GID of its down
 * link, so it opens; the connection setup over eth0 is what fails), and
 * changes nothing: the ops still run on the backup NICs.
 */
static int refused_back(HcclComm comm, int rank)
{
	uint32_t ranks[NR] = {0, 1, 2, 3};
	bool flags[NR] = {false, false, false, false};
	double t = ohc_test_now_s();
	HcclResult r;

	r = HcclCommWorkingDevNicSet(comm, ranks, flags, NR);
	fprintf(stderr,
		"rank %d: switch back with eth0 down in vm1: %d in "
		"%.2f s\n",
		rank, r, ohc_test_now_s() - t);
	if (r != HCCL_E_ROCE_CONNECT && r != HCCL_E_TIMEOUT) {
		fprintf(stderr, "rank %d: want a connection error\n", rank);
		return 1;
	}
	return rounds(comm, rank, "backup after the refused switch back");
}

/* Bring eth0 back and wait until rxe0 has its GID again. */
static int link_up(void)
{
	const char *gid = getenv("OHC_VM_GID_INDEX");
	double end = ohc_test_now_s() + 20;

	if (ohc_test_sh("ip link set dev %s up", getenv("OHC_VM_NETDEV")))
		return -1;
	while (ohc_test_now_s() < end) {
		if (ohc_test_sh("grep -q ACTIVE "
				"/sys/class/infiniband/rxe0/ports/1/state "
				"&& ! grep -q "
				"'^0000:0000:0000:0000:0000:0000:0000:0000' "
				"/sys/class/infiniband/rxe0/ports/1/gids/%s",
				gid ? gid : "1") == 0)
			return 0;
		usleep(200000);
	}
	return -1;
}

static int nic_rank(int local, int nlocal, void *arg)
{
	int rank = vm_index * PER_VM + local, bad = 0;
	int link_rank = PER_VM; /* VM 1's first rank */
	HcclResult async = HCCL_SUCCESS;
	HcclComm comm;
	int fds;

	(void)nlocal;
	(void)arg;
	if (aclrtSetDevice(local))
		OHC_RANK_FAIL("rank %d: aclrtSetDevice failed", rank);
	fds = ohc_test_count_fds();
	if (HcclCommInitClusterInfo(table_path, (uint32_t)rank, &comm))
		OHC_RANK_FAIL("rank %d: init failed", rank);
	bad |= rounds(comm, rank, "primary");
	bad |= !bad && switch_and_run(comm, rank, local, true, "backup");
	if (!bad && rank == link_rank)
		bad |= ohc_test_sh("ip link set dev %s down",
				   getenv("OHC_VM_NETDEV")) != 0;
	bad |= !bad && rounds(comm, rank, "backup, eth0 down in vm1");
	bad |= !bad && refused_back(comm, rank);
	if (rank == link_rank && link_up()) {
		fprintf(stderr, "rank %d: eth0 or rxe0's GID not back\n", rank);
		bad = 1;
	}
	/* everyone past the link-up before the switch talks over eth0 */
	bad |= !bad && HcclBarrier(comm, NULL) != HCCL_SUCCESS;
	bad |= !bad &&
	       switch_and_run(comm, rank, local, false, "primary again");
	HcclGetCommAsyncError(comm, &async);
	bad |= async != HCCL_SUCCESS;
	bad |= HcclCommDestroy(comm) != HCCL_SUCCESS;
	if (ohc_vx_mr_live() || ohc_test_count_fds() != fds) {
		fprintf(stderr, "rank %d: %ld MRs left, %d fds (%d before)\n",
			rank, ohc_vx_mr_live(), ohc_test_count_fds(), fds);
		bad = 1;
	}
	return bad;
}

Test(nic_switch, backup_and_back, .timeout = 300)
{
	double t0 = ohc_test_now_s();

	two_nics_or_skip(27000);
	/* bounds the refused switch back (and the init, fast here) */
	setenv("HCCL_CONNECT_TIMEOUT", "20", 1);
	setenv("HCCL_EXEC_TIMEOUT", "60", 1);
	ohc_test_fork_settle();
	cr_expect_eq(ohc_test_fork_ranks(PER_VM, nic_rank, NULL, 240), 0);
	fprintf(stderr, "vm%d: nic_switch: %.1f s\n", vm_index,
		ohc_test_now_s() - t0);
	unlink(table_path);
	ohc_test_sh("ip link set dev %s up", getenv("OHC_VM_NETDEV"));
}

/* stderr into a file during a call, read back (malloc'd). */
struct capture {
	int saved, fd;
};

static void capture_begin(struct capture *c)
{
	char path[64];

	snprintf(path, sizeof(path), "/tmp/ohc_nic_switch_%d.log",
		 (int)getpid());
	c->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	unlink(path);
	fflush(stderr);
	c->saved = dup(2);
	if (c->fd >= 0)
		dup2(c->fd, 2);
}

static char *capture_end(struct capture *c)
{
	char *log = calloc(1, 65536);
	ssize_t n = c->fd >= 0 ? pread(c->fd, log, 65535, 0) : 0;

	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	if (c->fd >= 0)
		close(c->fd);
	log[n > 0 ? n : 0] = 0;
	return log;
}

static int bad_rank(int local, int nlocal, void *arg)
{
	int rank = vm_index * PER_VM + local, bad = 0;
	uint32_t three = 3;
	bool yes = true;
	struct capture cap;
	HcclComm comm;
	HcclResult r;
	char *log;

	(void)nlocal;
	(void)arg;
	if (aclrtSetDevice(local) ||
	    HcclCommInitClusterInfo(table_path, (uint32_t)rank, &comm))
		OHC_RANK_FAIL("rank %d: init failed", rank);
	bad |= rounds(comm, rank, "primary");
	capture_begin(&cap);
	r = HcclCommWorkingDevNicSet(comm, &three, &yes, 1);
	log = capture_end(&cap);
	fprintf(stderr, "rank %d: switch rank 3 to " BAD_IP ": %d\n%s", rank, r,
		log);
	if (r != HCCL_E_PARA || (rank == 3 && !strstr(log, BAD_IP)) ||
	    (rank != 3 && !strstr(log, "rank 3"))) {
		fprintf(stderr,
			"rank %d: want HCCL_E_PARA naming rank 3 / "
			"its IP\n",
			rank);
		bad = 1;
	}
	free(log);
	bad |= rounds(comm, rank, "primary after the refused switch");
	bad |= HcclCommDestroy(comm) != HCCL_SUCCESS;
	bad |= ohc_vx_mr_live() != 0;
	return bad;
}

Test(nic_switch, bad_backup, .timeout = 300)
{
	bad_backup_rank3 = BAD_IP;
	two_nics_or_skip(28000);
	setenv("HCCL_CONNECT_TIMEOUT", "60", 1);
	setenv("HCCL_EXEC_TIMEOUT", "60", 1);
	ohc_test_fork_settle();
	cr_expect_eq(ohc_test_fork_ranks(PER_VM, bad_rank, NULL, 240), 0);
	unlink(table_path);
}
