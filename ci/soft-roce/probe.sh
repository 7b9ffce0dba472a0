#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Is there an RDMA device here? Prints what ibv_devices sees and exits 0,
# or prints why not and exits 77 (the "skipped" code of ctest's
# SKIP_RETURN_CODE and of automake), so RDMA tests can skip with a reason.
# usage: ci/soft-roce/probe.sh [--quiet]
set -uo pipefail

quiet=0
[ "${1:-}" = --quiet ] && quiet=1
say() { [ "$quiet" = 1 ] || echo "probe: $*"; }

if ! command -v ibv_devices >/dev/null; then
	say "no RDMA device: ibv_devices not installed (package ibverbs-utils)"
	exit 77
fi
out=$(ibv_devices 2>&1)
rc=$?
# Devices are the lines after the two header lines.
devs=$(printf '%s\n' "$out" | awk 'NR > 2 && NF >= 1 { print $1 }')
if [ $rc -ne 0 ] || [ -z "$devs" ]; then
	why=
	[ $rc -eq 0 ] || why=$(printf '%s\n' "$out" | head -n 1)
	[ -d /sys/class/infiniband ] || why="${why:+$why; }kernel without RDMA (/sys/class/infiniband missing; run under ci/soft-roce/run-vm.sh)"
	say "no RDMA device: ${why:-ibv_devices lists none}"
	exit 77
fi
for d in $devs; do
	state=$(cat /sys/class/infiniband/"$d"/ports/1/state 2>/dev/null | awk '{ print $2 }')
	nd=$(rdma link show "$d/1" 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "netdev") print $(i + 1) }')
	say "RDMA device $d: port 1 ${state:-state unknown}${nd:+, netdev $nd}"
done
exit 0
