#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The verbs-relevant suites in ONE Soft-RoCE VM with HCCL_INTRA_ROCE_ENABLE=1
# (every rank pair over rxe), then coll.two_node, comm.two_node_faults and
# coll.random's two_vms cases across TWO VMs (two ranks each: shm inside a
# VM, verbs across; a peer killed, a link taken down, a QP driven to error,
# 5 % loss), then comm.nic_switch across two VMs with two wires each
# (HcclCommWorkingDevNicSet onto rxe1 and back), from an existing build
# folder.
# Exit status is the first failure's (124/125: a VM timed out / failed).
# A stage whose VM's emulated NIC stopped transmitting (the guest kernel's
# "NETDEV WATCHDOG ... transmit queue timed out", or vm-init.sh's wire
# check after a failed command: pings its NIC never took, or no answer
# from a peer that still ran; QEMU's virtio-net over the socket netdev
# stalled, nothing our code does) is named as such and run again, up to
# twice; any other failure is final. The stall was rare, then hit one
# stage in 3 of 4 local runs on 2026-12-06 (the two-VM stage twice, the
# two-NIC stage once), each time passing on the rerun.
# usage: ci/soft-roce/vm-suites.sh BUILD_DIR
#   OHC_VM_SUITES      ctest -R regex (default: the suites below)
#   OHC_TEST_CASES     cases of coll.random (default 24: TCG is slow)
#   OHC_TEST_CASES_TWO_VMS  cases of coll.random across two VMs (200)
#   OHC_TEST_SEED      seed of coll.random (default: time-based, printed)
#   OHC_TEST_BIG_COUNT the suites' large count (default 65539, not 1M+3)
#   OHC_VM_LAZY_SUITES ctest -R regex run after those in the same VM with
#                      OPENHCCL_RDMA_LAZY_RANKS=0 (every verbs connection
#                      made on first use; default: transport.conformance
#                      and coll.allreduce, about a minute; empty: none)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:?usage: vm-suites.sh BUILD_DIR}
[ -d "$build" ] || { echo "vm-suites: no build folder $build" >&2; exit 2; }
suites=${OHC_VM_SUITES:-'^(transport\.(conformance|verbs|caps)|coll\.(p2p_barrier|failures|allreduce|random|desync|task)|api\.doctor_rdma|comm\.(zerocopy|lazy_connect))$'}
# and again with every verbs connection made on first use
lazy_suites=${OHC_VM_LAZY_SUITES-'^(transport\.conformance|coll\.allreduce)$'}

bash ci/soft-roce/prepare.sh
runs=${OHC_SOFTROCE_CACHE:-build/soft-roce}/runs
# A rank a test finds hung has its threads' stacks printed (gdb) before
# it is killed: a hang seen once in CI is read from the log, not rerun.
export OHC_TEST_HANG_BT=1

# Whether a run's emulated wire died (results folder $1): a VM's own NIC
# (the watchdog, or its wire check), or a peer that did not answer the
# wire check of the VM that failed first while it still ran (run-vm
# stopped it later: its folder has `stopped`).
wire_died() {
	local c v
	grep -qsE "NETDEV WATCHDOG|emulated NIC stopped transmitting" \
		"$1"/vm*/console.log && return 0
	for c in "$1"/vm*/console.log; do
		grep -qs "does not answer" "$c" || continue
		for v in "$1"/vm*; do
			[ "$v" != "$(dirname "$c")" ] && [ -e "$v/stopped" ] &&
				return 0
		done
	done
	return 1
}

# run_vm NAME RUN-VM-ARGS...: run-vm.sh, again (up to 3 tries in all)
# while a VM's NIC stalled.
run_vm() {
	local name=$1 try dir rc
	shift
	for try in 1 2 3; do
		mkdir -p "$runs"
		dir=$(mktemp -d "$runs/$(date +%Y%m%d-%H%M%S)-$name-$try.XXXX")
		rc=0
		ci/soft-roce/run-vm.sh --results "$dir" "$@" || rc=$?
		[ "$rc" != 0 ] && [ "$try" != 3 ] && wire_died "$dir" ||
			return "$rc"
		echo "vm-suites: $name: the emulated NIC of a VM stopped" \
			"transmitting (guest NETDEV WATCHDOG or the wire check, a QEMU stall):" \
			"running the stage again (try $((try + 1)) of 3)" >&2
	done
}

start=$(date +%s)
rc=0
run_vm one-vm --rw "$build" --timeout 1200 -- \
	env HCCL_INTRA_ROCE_ENABLE=1 OHC_TEST_CASES="${OHC_TEST_CASES:-24}" \
	OHC_TEST_BIG_COUNT="${OHC_TEST_BIG_COUNT:-65539}" bash -c \
	'ctest --test-dir "$0" -R "$1" --output-on-failure --timeout 900 &&
	 { [ -z "$2" ] || OPENHCCL_RDMA_LAZY_RANKS=0 ctest --test-dir "$0" \
	   -R "$2" --output-on-failure --timeout 900; }' \
	"$build" "$suites" "$lazy_suites" || rc=$?
echo "vm-suites: one VM: exit $rc after $(($(date +%s) - start)) s"
[ "$rc" = 0 ] || exit "$rc"

# Two hosts: two ranks per VM, shm inside a VM, verbs across the wire:
# coll.two_node, comm.two_node_faults, then coll.random's two_vms cases
# (both VMs draw the same cases from one seed, chosen here). With the
# rendezvous from 256 KiB, as on RDMA NICs (off on rxe unless set): the
# one-VM run above covers rxe's own defaults (pulled fragments instead).
# Ranks sleep at once when idle in the two-VM stages (OPENHCCL_SPIN_US=0,
# as every oversubscribed rank did before b8bc28f): with two ranks polling
# on a VM's one vCPU, taking its eth0 down (link_down, the flap, the NIC
# switch) left the guest's virtio-net transmit queue stopped for good (the
# kernel's NETDEV WATCHDOG; once an oops in tc after it) in 3 of 3 runs,
# and the same stage with the spin off passed in 117 s. The faults under
# test do not depend on the spin; the one-VM stage keeps the default.
quiet_wait=OPENHCCL_SPIN_US=0

start=$(date +%s)
seed=${OHC_TEST_SEED:-$(date +%s)}
echo "vm-suites: two VMs: random seed $seed (rerun with OHC_TEST_SEED=$seed)"
run_vm two-vms --vms 2 --rw "$build" --timeout 900 -- \
	env OHC_TEST_SEED="$seed" OPENHCCL_RDMA_RNDV_KB=256 $quiet_wait \
	OHC_TEST_CASES="${OHC_TEST_CASES_TWO_VMS:-200}" bash -c \
	'"$0"/test/test_coll_two_node -j1 &&
	 "$0"/test/test_comm_two_node_faults -j1 &&
	 "$0"/test/test_coll_random -j1 --filter random/two_vms &&
	 "$0"/test/test_comm_zerocopy -j1 --filter zerocopy/two_vms' \
	"$build" || rc=$?
echo "vm-suites: two VMs: exit $rc after $(($(date +%s) - start)) s"
[ "$rc" = 0 ] || exit "$rc"

# Two VMs with two wires (eth0/rxe0 and eth1/rxe1): ranks switched to their
# backup NIC and back (about 40 s with the boot; 20 s of it a switch that
# must fail on a down link).
start=$(date +%s)
run_vm two-nics --vms 2 --nics 2 --rw "$build" --timeout 300 -- \
	env $quiet_wait "$build"/test/test_comm_nic_switch -j1 || rc=$?
echo "vm-suites: two VMs, two NICs: exit $rc after $(($(date +%s) - start)) s"
exit "$rc"
