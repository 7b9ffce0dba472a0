#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Smoke test of the Soft-RoCE infrastructure, with timings:
#   1. one VM: ibv_devices, ibv_devinfo, rdma link, probe.sh, ib_write_bw
#      server+client on rxe0 (64 KiB..4 MiB) and ib_write_lat;
#   2. two VMs over the emulated wire: ib_write_bw server in VM 0, client
#      in VM 1 (it retries until the server listens);
#   3. host mode: a VM without rxe0 runs run-vm.sh --mode host (so
#      setup-host.sh creates rxe0 itself) with the two-VM part on it.
# usage: ci/soft-roce/smoke.sh [--mode auto|qemu|host] [--skip-host-check]
# Exit status 0 when everything ran and every number is positive.
# (Internally: smoke.sh --in-vm one|two runs the part inside a VM.)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)

# --- inside the VM -----------------------------------------------------------
# bw_line OUTPUT: the result row of perftest's table (first field a number).
result_row() { awk '$1 ~ /^[0-9]+$/ && NF >= 4 { print; exit }'; }

# run_client ARGS...: ib_write_bw/lat client, retried until the server
# listens (it may still be booting), for at most 180 s.
run_client() {
	local deadline=$((SECONDS + 180)) out
	while :; do
		if out=$(timeout 60 "$@" 2>&1); then
			printf '%s\n' "$out"
			return 0
		fi
		if [ $SECONDS -ge $deadline ]; then
			printf '%s\n' "$out" >&2
			echo "smoke: client '$*' failed for 180 s" >&2
			return 1
		fi
		sleep 1
	done
}

# bw_pair SIZE ITERS PORT SERVER_IP: server here in the background and a
# client, both on this machine's device (one VM, loopback through rxe0).
bw_pair() {
	local size=$1 iters=$2 port=$3 row spid
	local common=(-d "$OHC_VM_RDMA_DEV" -x "$OHC_VM_GID_INDEX" -s "$size"
		-n "$iters" -F --report_gbits -p "$port")
	timeout 120 ib_write_bw "${common[@]}" >"$tmp/srv.$port" 2>&1 &
	spid=$!
	row=$(run_client ib_write_bw "${common[@]}" "$OHC_VM_IP" | result_row) || {
		kill "$spid" 2>/dev/null; cat "$tmp/srv.$port" >&2; return 1; }
	wait "$spid" || { echo "smoke: ib_write_bw server (size $size) failed" >&2; cat "$tmp/srv.$port" >&2; return 1; }
	[ -n "$row" ] || { echo "smoke: no result row from ib_write_bw -s $size" >&2; return 1; }
	# #bytes #iterations BW_peak BW_average MsgRate
	echo "$row" | awk -v t="$4" '{ printf "SMOKE write_bw %s %s %s %s\n", t, $1, $2, $4 }'
}

in_vm_one() {
	echo "== ibv_devices"
	ibv_devices
	ibv_devices | grep -qw "$OHC_VM_RDMA_DEV" || { echo "smoke: $OHC_VM_RDMA_DEV missing" >&2; return 1; }
	echo "== ibv_devinfo -d $OHC_VM_RDMA_DEV"
	ibv_devinfo -d "$OHC_VM_RDMA_DEV"
	ibv_devinfo -d "$OHC_VM_RDMA_DEV" | grep -q PORT_ACTIVE || { echo "smoke: port not active" >&2; return 1; }
	echo "== rdma link"
	rdma link
	echo "== probe.sh"
	bash "$here/probe.sh"
	echo "== ib_write_bw on $OHC_VM_RDMA_DEV (loopback), GID index $OHC_VM_GID_INDEX"
	local port=18515 s
	for s in 65536:200 262144:100 1048576:40 4194304:10; do
		bw_pair "${s%:*}" "${s#*:}" "$port" 1vm
		port=$((port + 1))
	done
	echo "== ib_write_lat 8 B"
	local common=(-d "$OHC_VM_RDMA_DEV" -x "$OHC_VM_GID_INDEX" -s 8 -n 200 -F -p "$port")
	timeout 120 ib_write_lat "${common[@]}" >"$tmp/lat.srv" 2>&1 &
	local spid=$! row
	row=$(run_client ib_write_lat "${common[@]}" "$OHC_VM_IP" | result_row)
	wait "$spid" || { echo "smoke: ib_write_lat server failed" >&2; cat "$tmp/lat.srv" >&2; return 1; }
	# #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
	echo "$row" | awk '{ printf "SMOKE write_lat 1vm %s %s typical=%s avg=%s p99=%s\n", $1, $2, $5, $6, $8 }'
}

in_vm_two() {
	echo "== vm$OHC_VM_INDEX: $OHC_VM_RDMA_DEV on $OHC_VM_NETDEV $OHC_VM_IP, peer $OHC_VM_PEER_IP, GID index $OHC_VM_GID_INDEX (mode $OHC_VM_MODE)"
	local port=18600 s size iters row
	for s in 65536:100 1048576:20 4194304:5; do
		size=${s%:*}
		iters=${s#*:}
		local common=(-d "$OHC_VM_RDMA_DEV" -x "$OHC_VM_GID_INDEX" -s "$size"
			-n "$iters" -F --report_gbits -p "$port")
		if [ "$OHC_VM_INDEX" = 0 ]; then
			# Server; the client in VM 1 reports the numbers.
			timeout 240 ib_write_bw "${common[@]}" >"$tmp/srv" 2>&1 ||
				{ cat "$tmp/srv" >&2; echo "smoke: server -s $size failed" >&2; return 1; }
			echo "server -s $size done"
		else
			row=$(run_client ib_write_bw "${common[@]}" "$OHC_VM_PEER_IP" | result_row)
			[ -n "$row" ] || { echo "smoke: no result row (size $size)" >&2; return 1; }
			echo "$row" | awk -v t="2${OHC_VM_MODE}" '{ printf "SMOKE write_bw %s %s %s %s\n", t, $1, $2, $4 }'
		fi
		port=$((port + 1))
	done
}

if [ "${1:-}" = --in-vm ]; then
	: "${OHC_VM_RDMA_DEV:?not inside run-vm.sh}"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	case "${2:-}" in
	one) in_vm_one ;;
	two) in_vm_two ;;
	*) echo "smoke: --in-vm one|two" >&2; exit 2 ;;
	esac
	exit 0
fi

# --- on the host -------------------------------------------------------------
mode=auto
host_check=1
while [ $# -gt 0 ]; do
	case "$1" in
	--mode) mode=${2:?}; shift 2 ;;
	--skip-host-check) host_check=0; shift ;;
	*) echo "usage: $0 [--mode auto|qemu|host] [--skip-host-check]" >&2; exit 2 ;;
	esac
done
cd "$top"
t0=$(date +%s.%N)
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

echo "== prepare.sh"
t=$(date +%s.%N)
bash "$here/prepare.sh"
t_prep=$(since "$t")

echo "== probe.sh on this host (77 = no RDMA here, expected without rdma_rxe)"
prc=0
bash "$here/probe.sh" || prc=$?
echo "probe.sh exit $prc"

runs=$(mktemp -d "${TMPDIR:-/tmp}/ohc-smoke.XXXXXX")
trap 'rm -rf "$runs"' EXIT
fail=0

phase() { # NAME SECONDS-VAR run-vm args...
	local name=$1
	shift
	echo
	echo "== $name: run-vm.sh $*"
	local t rc=0
	t=$(date +%s.%N)
	bash "$here/run-vm.sh" --mode "$mode" --results "$runs/$name" "$@" || rc=$?
	eval "t_$name=$(since "$t")"
	if [ $rc -ne 0 ]; then
		echo "smoke: $name FAILED (exit $rc)" >&2
		fail=1
	fi
}

phase one --vms 1 --timeout 300 -- bash "$here/smoke.sh" --in-vm one
phase two --vms 2 --timeout 420 -- bash "$here/smoke.sh" --in-vm two
if [ "$host_check" = 1 ] && [ "$mode" != host ]; then
	# A VM without rxe0, where run-vm.sh --mode host must set it up.
	phase host --vms 1 --no-rxe --timeout 300 -- bash -c \
		'exec bash "$0" --mode host --vms 2 --timeout 240 --results "$OHC_VM_OUTDIR/inner" -- bash "$1" --in-vm two' \
		"$here/run-vm.sh" "$here/smoke.sh"
fi

# --- report ------------------------------------------------------------------
echo
echo "== Soft-RoCE smoke summary"
boot_of() { awk '/^command_start/ { printf "%.1f", $2 }' "$1/timing" 2>/dev/null || true; }
for n in one two host; do
	for d in "$runs/$n"/vm*; do
		[ -d "$d" ] || continue
		b=$(boot_of "$d")
		[ -n "$b" ] && echo "boot to command ($n/${d##*/}): ${b} s (guest uptime)"
	done
done
nums=$(cat "$runs"/*/vm*/stdout 2>/dev/null | grep -o 'SMOKE .*' || true)
printf '%s\n' "$nums" | awk '
	$2 == "write_bw" {
		if ($3 == "1vm") where = "one VM, loopback on rxe0"
		else if ($3 == "2qemu") where = "two VMs over the wire"
		else where = "host mode, 2 processes"
		printf "ib_write_bw %-26s %8d B x %-4d %8.3f Gb/s\n", where, $4, $5, $6
		if ($6 + 0 <= 0) bad = 1
	}
	$2 == "write_lat" {
		printf "ib_write_lat one VM, loopback on rxe0 %6d B x %-4d %s %s %s us\n", $4, $5, $6, $7, $8
	}
	END { exit bad }' || { echo "smoke: a bandwidth was not positive" >&2; fail=1; }
n_bw=$(printf '%s\n' "$nums" | grep -c 'write_bw' || true)
want_bw=7
[ "$host_check" = 1 ] && [ "$mode" != host ] && want_bw=10
if [ "$n_bw" -lt "$want_bw" ]; then
	echo "smoke: expected $want_bw ib_write_bw results, got $n_bw" >&2
	fail=1
fi
printf '%s\n' "$nums" | grep -q write_lat || { echo "smoke: no ib_write_lat result" >&2; fail=1; }
echo "wall: prepare ${t_prep}s, one VM ${t_one:-?}s, two VMs ${t_two:-?}s, host mode ${t_host:--}s, total $(since "$t0")s"
if [ $fail -ne 0 ]; then
	echo "smoke: FAILED (results kept in $runs)" >&2
	trap - EXIT
	exit 1
fi
echo "smoke: OK"
