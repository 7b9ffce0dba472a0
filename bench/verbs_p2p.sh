#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# HcclSend/HcclRecv bandwidth over the verbs transport against ib_write_bw
# on the same RDMA device in the same run, 64 KiB..4 MiB, printed side by
# side with the ratio. Without an RDMA device here it runs itself inside
# the Soft-RoCE VM (ci/soft-roce/run-vm.sh); numbers there are TCG
# emulation, so only the ratio means anything.
# usage: bench/verbs_p2p.sh [BUILD_DIR=build/bench-verbs]
#   BYTES_PER_SIZE (default 32 MiB) bytes moved per size and run;
#   REPS (default 2) alternating runs per tool, the best one counts.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
build=${1:-build/bench-verbs}
per=${BYTES_PER_SIZE:-$((32 << 20))}

if [ -z "${OHC_VM_MODE:-}" ] && ! ls /sys/class/infiniband/* >/dev/null 2>&1; then
	cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build "$build" -j"$(nproc)" --target ohc_verbs_p2p_bench >/dev/null
	bash ci/soft-roce/prepare.sh >/dev/null
	build=$(cd "$build" && pwd)
	exec ci/soft-roce/run-vm.sh --rw "$build" --timeout 1500 -- \
		env BYTES_PER_SIZE="$per" REPS="${REPS:-2}" \
		bash bench/verbs_p2p.sh "$build"
fi

dev=${OHC_VM_RDMA_DEV:-$(ls /sys/class/infiniband | head -1)}
gid=${OHC_VM_GID_INDEX:-1}
ip=${OHC_VM_IP:-127.0.0.1}
bench=$build/bench/ohc_verbs_p2p_bench
[ -x "$bench" ] || { echo "no $bench: build it first" >&2; exit 2; }

printf '%-9s %-6s %14s %14s %7s\n' bytes iters ib_write_bw HcclSend/Recv ratio
# The machines are shared and TCG is noisy: each tool runs REPS times,
# alternating, and the best run of each counts.
reps=${REPS:-2}
ib_run() {
	ib_write_bw -d "$dev" -x "$gid" -s "$1" -n "$2" >/dev/null 2>&1 &
	local srv=$!
	sleep 1
	ib_write_bw -d "$dev" -x "$gid" -s "$1" -n "$2" "$ip" 2>/dev/null |
		awk -v s="$1" '$1 == s { print $4 }'
	wait "$srv" || true
}
ohc_run() {
	HCCL_INTRA_ROCE_ENABLE=1 "$bench" "$1" "$1" "$2" 3 |
		awk -v s="$1" '$1 == s { print $3 }'
}
best() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN { print (a > b ? a : b) }'; }
for ((s = 64 << 10; s <= 4 << 20; s *= 2)); do
	n=$((per / s))
	[ "$n" -ge 8 ] || n=8
	ib=0
	ohc=0
	for ((r = 0; r < reps; r++)); do
		ib=$(best "$ib" "$(ib_run "$s" "$n")")
		ohc=$(best "$ohc" "$(ohc_run "$s" "$n")")
	done
	ratio=$(awk -v a="$ohc" -v b="$ib" \
		'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
	printf '%-9s %-6s %14s %14s %7s\n' "$s" "$n" "$ib" "$ohc" "$ratio"
done
echo "(MB/s, MB = 2^20 bytes, best of $reps; ib_write_bw 'BW average';"
echo " ratio = HcclSend/Recv / ib_write_bw)"
