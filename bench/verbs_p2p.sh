#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# HcclSend/HcclRecv bandwidth over the verbs transport against ib_write_bw
# on the same RDMA device in the same run, 64 KiB..4 MiB, printed side by
# side with the ratio. Without an RDMA device here it runs itself inside
# the Soft-RoCE VM (ci/soft-roce/run-vm.sh); numbers there are TCG
# emulation, so only the ratio means anything.
# The HcclSend/Recv side enqueues each size's messages on a stream and
# synchronizes once (hccl_test's way; ib_write_bw keeps 128 writes in
# flight too); OHC_BENCH_SYNC=1 in a variant makes each message its own
# synchronous call (NULL stream), as before.
# usage: bench/verbs_p2p.sh [BUILD_DIR=build/bench-verbs]
#   BYTES_PER_SIZE (default 32 MiB) bytes moved per size and run;
#   MIN_KB, MAX_KB (default 64, 4096) the sizes swept (doubling);
#   REPS (default 2) alternating runs per tool, the best one counts;
#   VARIANTS (default below) the HcclSend/Recv configurations compared,
#     space-separated NAME[:VAR=VAL[,VAR=VAL...]]: "eager" is the slot
#     path alone (what every size used before the rendezvous),
#     "rdv-nocache" registers and deregisters every rendezvous buffer,
#     "rdv" is the default (its registration cache on: the VM is root).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
# shellcheck source=bench/lib.sh
. bench/lib.sh
build=${1:-build/bench-verbs}
per=${BYTES_PER_SIZE:-$((32 << 20))}

if ohc_bench_need_vm; then
	build=$(ohc_bench_verbs_build "$top" "$build")
	exec ci/soft-roce/run-vm.sh --rw "$build" --timeout 1500 -- \
		env BYTES_PER_SIZE="$per" REPS="${REPS:-2}" \
		MIN_KB="${MIN_KB:-64}" MAX_KB="${MAX_KB:-4096}" \
		${VARIANTS:+VARIANTS="$VARIANTS"} \
		bash bench/verbs_p2p.sh "$build"
fi

dev=${OHC_VM_RDMA_DEV:-$(ls /sys/class/infiniband | head -1)}
gid=${OHC_VM_GID_INDEX:-1}
ip=${OHC_VM_IP:-127.0.0.1}
bench=$build/bench/ohc_verbs_p2p_bench
[ -x "$bench" ] || { echo "no $bench: build it first" >&2; exit 2; }

variants=${VARIANTS:-"eager:OPENHCCL_RDMA_RNDV_KB=0 rdv-nocache:OPENHCCL_RDMA_MR_CACHE=0 rdv rdv+4qp:HCCL_RDMA_QPS_PER_CONNECTION=4"}
read -r -a vlist <<<"$variants"
hdr=$(printf '%-9s %-6s %11s' bytes iters ib_write_bw)
for v in "${vlist[@]}"; do hdr+=$(printf ' %20s' "${v%%:*}"); done
echo "$hdr"
# The machines are shared and TCG is noisy: each tool runs REPS times,
# alternating, and the best run of each counts.
reps=${REPS:-2}
# Every run is bounded (a client that came before its server was
# listening, a stuck rank): a missing number counts as 0 and is logged.
ib_run() {
	local srv bw="" t=0
	timeout 300 ib_write_bw -d "$dev" -x "$gid" -s "$1" -n "$2" \
		>/dev/null 2>&1 &
	srv=$!
	while [ -z "$bw" ] && [ $t -lt 5 ] && kill -0 "$srv" 2>/dev/null; do
		sleep 1
		t=$((t + 1))
		bw=$(timeout 300 ib_write_bw -d "$dev" -x "$gid" -s "$1" \
			-n "$2" "$ip" 2>/dev/null |
			awk -v s="$1" '$1 == s { print $4 }')
	done
	wait "$srv" || true
	echo "${bw:-0}"
}
ohc_run() { # VARIANT_ENV SIZE ITERS
	local envs=() t0=$SECONDS bw
	[ -n "$1" ] && IFS=, read -r -a envs <<<"$1"
	bw=$(env "${envs[@]}" HCCL_INTRA_ROCE_ENABLE=1 timeout 300 "$bench" \
		"$2" "$2" "$3" 3 | awk -v s="$2" '$1 == s { print $3 }')
	echo "verbs_p2p: $2 B ${1:-default}: ${bw:-FAILED} MB/s in" \
		"$((SECONDS - t0)) s" >&2
	echo "${bw:-0}"
}
best() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN { print (a > b ? a : b) }'; }
for ((s = ${MIN_KB:-64} << 10; s <= ${MAX_KB:-4096} << 10; s *= 2)); do
	n=$((per / s))
	[ "$n" -ge 8 ] || n=8
	ib=0
	declare -A got=()
	for ((r = 0; r < reps; r++)); do
		ib=$(best "$ib" "$(ib_run "$s" "$n")")
		for v in "${vlist[@]}"; do
			e=""
			[[ "$v" == *:* ]] && e=${v#*:}
			got[$v]=$(best "${got[$v]:-0}" "$(ohc_run "$e" "$s" "$n")")
		done
	done
	line=$(printf '%-9s %-6s %11s' "$s" "$n" "$ib")
	for v in "${vlist[@]}"; do
		cell=$(awk -v a="${got[$v]}" -v b="$ib" \
			'BEGIN { if (b > 0) printf "%.1f (%.2fx)", a, a / b; else printf "%.1f", a }')
		line+=$(printf ' %20s' "$cell")
	done
	echo "$line"
	unset got
done
echo "(MB/s, MB = 2^20 bytes, best of $reps; ib_write_bw 'BW average';"
echo " (Nx) = that HcclSend/Recv variant / ib_write_bw)"
