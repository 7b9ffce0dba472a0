#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Soak with faults: hccl_soak (randomized mixed collectives on four
# communicators, every result checked) while a fault is injected, for
# each transport, and a fault table of what happened.
#
# usage: ci/soak.sh [-t SECONDS] [-o OUTDIR] [--no-vm] BUILD_DIR
#   -t SECONDS   soak time per scenario (default 20)
#   -o OUTDIR    results (default BUILD_DIR/soak): results.jsonl, one
#                log per scenario, fault_table.md
#   --no-vm      the shared-memory scenarios only (no Soft-RoCE VM)
#
# Scenarios: shm (4 local ranks), verbs (4 ranks in one VM, every pair
# over rxe0: HCCL_INTRA_ROCE_ENABLE=1) and two-VM (2 ranks per VM: shm
# inside a VM, verbs across the emulated wire), each with
#   none   no fault: every operation must run and be right
#   kill   a rank killed (SIGKILL) mid-run: every survivor must fail with
#          an error, none may hang
#   stall  a rank stopped for 2 s (SIGSTOP/SIGCONT), below the exec
#          timeout (10 s): everything must still be right
# and across the wire only
#   loss   5 % packet loss both ways (tc netem): everything right
#   delay  20 ms more latency both ways (tc netem): everything right
#   flap   the wire down for 1 s, then up: the connections are replayed
#          (OPENHCCL_RDMA_REPLAY_MS), everything right
# OHC_SOAK_TWO_VM_FAULTS picks the two-VM scenarios (e.g. "flap": one
# run-vm.sh --vms 2 ... bash ci/soak.sh BUILD_DIR with OHC_SOAK_INSIDE=1,
# as below, repeats one of them).
# Exit status: 0 when no scenario hung, gave a wrong result or ended
# otherwise than expected; the table says which did. Hours of it:
# `ci/soak.sh -t 3600 build/ci` (each scenario that long).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD

secs=20
out=
vm=1
while [ $# -gt 1 ]; do
	case $1 in
	-t) secs=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	--no-vm) vm=0; shift ;;
	*) break ;;
	esac
done
build=$(cd "${1:?usage: ci/soak.sh [-t S] [-o DIR] [--no-vm] BUILD_DIR}" && pwd)
soak=$build/tools/soak/hccl_soak
[ -x "$soak" ] || { echo "soak: no $soak (build first)" >&2; exit 2; }
if [ "${OHC_SOAK_INSIDE:-}" != 1 ]; then # inside a VM: its own outdir
	out=${out:-$build/soak}
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
fi

# ---------------------------------------------------------------------------
# One scenario on this machine (host or inside a VM).
#   scenario TRANSPORT FAULT EXPECT -- hccl_soak args...
# Appends a JSON line to $OHC_SOAK_RESULTS.
scenario() {
	local tp=$1 fault=$2 expect=$3
	shift 4
	local log=$OHC_SOAK_DIR/$tp-$fault.log
	local t0 tf=0 rc=0 end victim_pid=
	local shm_before shm_after

	shm_before=$(ls /dev/shm | grep -c -E 'ohc|hccl' || true)
	t0=$(date +%s.%N)
	"$soak" "$@" >"$log.json" 2>"$log" &
	local pid=$!
	if [ "$fault" != none ] && [ "${OHC_SOAK_INJECT:-1}" = 1 ]; then
		# from the first operation on (init may take a while)
		for _ in $(seq 600); do
			grep -q "running" "$log" 2>/dev/null && break
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		sleep "$(awk -v s="$secs" 'BEGIN{print s/3}')"
		tf=$(date +%s.%N)
		inject "$fault" "$pid"
	fi
	wait "$pid" || rc=$?
	end=$(date +%s.%N)
	sleep 0.5
	shm_after=$(ls /dev/shm | grep -c -E 'ohc|hccl' || true)
	local outcome=ok
	case $rc in
	0) outcome=ok ;;
	1) outcome=wrong ;;
	2) outcome=hang ;;
	3) outcome=failed ;;
	*) outcome="exit $rc" ;;
	esac
	# from the fault to the first error a rank of this machine saw, and
	# to the end of the run (teardown included)
	local tte=- tend=-
	if [ "$outcome" = failed ] && [ "$tf" != 0 ]; then
		tte=$(awk -F'"error_at": ' -v f="$tf" '{split($2,a,","); t=a[1]+0; if (t > 0 && (m == "" || t < m)) m = t} END{if (m == "") print "-"; else printf "%.2f", m - f}' "$log.json")
		tend=$(awk -v a="$tf" -v b="$end" 'BEGIN{printf "%.1f", b-a}')
	fi
	local ops errs warns first
	ops=$(awk -F'"ops": ' '{split($2,a,","); s+=a[1]} END{print s+0}' "$log.json")
	errs=$(grep -c ' ERROR ' "$log" || true)
	warns=$(grep -c ' WARN ' "$log" || true)
	first=$(grep -m1 -E ' ERROR ' "$log" | sed 's/^\[[^]]*\] ERROR //; s/ ([a-z_]*\.c:[0-9]*)$//; s/"/'"'"'/g; s/\\/\//g' | cut -c1-160 || true)
	printf '{"transport": "%s", "fault": "%s", "expect": "%s", "outcome": "%s", "ops": %s, "seconds": %.1f, "time_to_error_s": "%s", "time_to_end_s": "%s", "error_lines": %s, "warn_lines": %s, "first_error": "%s", "shm_left": %s}\n' \
		"$tp" "$fault" "$expect" "$outcome" "$ops" \
		"$(awk -v a="$t0" -v b="$end" 'BEGIN{print b-a}')" "$tte" "$tend" \
		"$errs" "$warns" "$first" "$((shm_after - shm_before))" \
		>>"$OHC_SOAK_RESULTS"
	echo "soak: $tp $fault: $outcome (expected $expect), $ops ops, $errs ERROR lines"
}

# Inject FAULT into the run whose launcher is PID (in this VM or host).
inject() {
	local fault=$1 pid=$2 victim
	# the last rank process of the launcher (a child of it)
	victim=$(pgrep -P "$pid" | tail -1)
	case $fault in
	kill) [ -n "$victim" ] && kill -9 "$victim" ;;
	stall)
		[ -n "$victim" ] && kill -STOP "$victim"
		sleep 2
		[ -n "$victim" ] && kill -CONT "$victim"
		;;
	flap)
		ip link set dev "$OHC_VM_NETDEV" down
		sleep 1
		ip link set dev "$OHC_VM_NETDEV" up
		;;
	loss | delay) ;; # set up before the run (both VMs)
	esac
}

# ---------------------------------------------------------------------------
# Inside a VM: the verbs scenarios (called through run-vm.sh).
if [ "${OHC_SOAK_INSIDE:-}" = 1 ]; then
	export HCCL_EXEC_TIMEOUT=10 HCCL_CONNECT_TIMEOUT=60
	export HCCL_RDMA_TIMEOUT=16 HCCL_RDMA_RETRY_CNT=6
	if [ "${OHC_VM_COUNT:-1}" = 1 ]; then
		export HCCL_INTRA_ROCE_ENABLE=1 OHC_SOAK_DIR=$OHC_SOAK_OUT
		for f in none kill stall; do
			exp=ok
			[ $f = kill ] && exp=failed
			scenario verbs $f $exp -- -np 4 -t "$secs" -c 16384
		done
		exit 0
	fi
	# Two VMs: ranks 0,1 here (VM 0) and 2,3 there (VM 1); VM 1 injects.
	export OHC_SOAK_DIR=$OHC_VM_OUTDIR
	table=/tmp/soak_table.json
	ip0=$OHC_VM_IP ip1=$OHC_VM_PEER_IP
	[ "$OHC_VM_INDEX" = 1 ] && { ip0=$OHC_VM_PEER_IP; ip1=$OHC_VM_IP; }
	cat >"$table" <<EOF
{"status": "completed", "version": "1.0", "server_count": "2",
 "server_list": [
  {"server_id": "vm0", "host_ip": "$ip0", "device": [
   {"device_id": "0", "device_ip": "$ip0", "rank_id": "0"},
   {"device_id": "1", "device_ip": "$ip0", "rank_id": "1"}]},
  {"server_id": "vm1", "host_ip": "$ip1", "device": [
   {"device_id": "0", "device_ip": "$ip1", "rank_id": "2"},
   {"device_id": "1", "device_ip": "$ip1", "rank_id": "3"}]}]}
EOF
	ranks=0,1
	[ "$OHC_VM_INDEX" = 1 ] && ranks=2,3
	export OHC_SOAK_RESULTS=$OHC_VM_OUTDIR/results.jsonl
	port=61000
	for f in ${OHC_SOAK_TWO_VM_FAULTS:-none kill stall loss delay flap}; do
		exp=ok
		[ $f = kill ] && exp=failed
		export HCCL_IF_BASE_PORT=$port
		port=$((port + 40))
		inj=0
		[ "$OHC_VM_INDEX" = 1 ] && inj=1
		case $f in
		loss) tc qdisc add dev "$OHC_VM_NETDEV" root netem loss 5% ;;
		delay) tc qdisc add dev "$OHC_VM_NETDEV" root netem delay 20ms ;;
		esac
		# under loss, small RDMA writes (ci/soft-roce/README.md)
		[ $f = loss ] && export OPENHCCL_RDMA_WRITE_KB=1 HCCL_RDMA_TIMEOUT=15
		OHC_SOAK_INJECT=$inj scenario two-vm $f $exp -- --rank-table "$table" \
			--ranks $ranks --nranks 4 -t "$secs" -c 16384 -s 7
		unset OPENHCCL_RDMA_WRITE_KB
		export HCCL_RDMA_TIMEOUT=16
		tc qdisc del dev "$OHC_VM_NETDEV" root 2>/dev/null || true
		# both VMs start the next scenario together
		sleep 3
	done
	exit 0
fi

# ---------------------------------------------------------------------------
# On the host: shm, then the VMs, then the table.
export OHC_SOAK_RESULTS=$out/results.jsonl OHC_SOAK_DIR=$out
: >"$OHC_SOAK_RESULTS"
export HCCL_EXEC_TIMEOUT=10
broken=0
want=3 # scenarios: 3 shm, 3 in one VM, 6 across two
[ "$vm" = 1 ] && want=12
for f in none kill stall; do
	exp=ok
	[ $f = kill ] && exp=failed
	scenario shm $f $exp -- -np 4 -t "$secs"
done
if [ "$vm" = 1 ]; then
	vmout=$out/vm1
	mkdir -p "$vmout"
	: >"$vmout/results.jsonl" # a rerun into the same folder starts afresh
	# the checkout is exported too: the VM sees the host's files except
	# under /tmp (its own tmpfs), where a clone may live
	ci/soft-roce/run-vm.sh --vms 1 --rw "$top" --rw "$vmout" \
		--timeout $((secs * 6 + 600)) \
		--env OHC_SOAK_INSIDE=1 --env OHC_SOAK_OUT="$vmout" \
		--env OHC_SOAK_RESULTS="$vmout/results.jsonl" -- \
		bash ci/soak.sh -t "$secs" "$build" ||
		{ echo "soak: one-VM run: exit $?"; broken=1; }
	cat "$vmout/results.jsonl" >>"$OHC_SOAK_RESULTS" 2>/dev/null || true
	res=$top/build/soft-roce/runs/soak-$$
	ci/soft-roce/run-vm.sh --vms 2 --rw "$top" --results "$res" \
		--timeout $((secs * 12 + 900)) \
		--env OHC_SOAK_INSIDE=1 -- \
		bash ci/soak.sh -t "$secs" "$build" ||
		{ echo "soak: two-VM run: exit $?"; broken=1; }
	# VM 1 injected the faults: its record of each run is the one to keep
	if [ -f "$res/vm1/out/results.jsonl" ]; then
		cat "$res/vm1/out/results.jsonl" >>"$OHC_SOAK_RESULTS"
		cp "$res"/vm1/out/*.log "$out/" 2>/dev/null || true
	fi
fi
rc=0
/usr/bin/python3 ci/fault_table.py "$OHC_SOAK_RESULTS" >"$out/fault_table.md" || rc=$?
cat "$out/fault_table.md"
got=$(wc -l <"$OHC_SOAK_RESULTS")
if [ "$got" != "$want" ] || [ "$broken" = 1 ]; then
	echo "soak: FAIL: $got of $want scenarios recorded$([ "$broken" = 1 ] && echo ', a VM run failed')" >&2
	rc=1
fi
exit "$rc"
