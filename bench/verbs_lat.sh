#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Small-message latency over the verbs transport against the device's
# floor, in the same run: ib_write_lat and ib_send_lat (perftest, t_avg)
# and HcclSend/HcclRecv's ping-pong (ohc_verbs_p2p_bench ... lat: half the
# round trip, synchronous calls), taking turns, ROUNDS rounds of MSGS
# messages of BYTES each. Prints each round, then per tool its best round
# over ib_write_lat's best and the median of the per-round ratios (the
# emulated VM's pace moves every tool 2x between rounds, so only these
# compare). Without an RDMA device here it runs itself inside the
# Soft-RoCE VM (ci/soft-roce/run-vm.sh).
# usage: bench/verbs_lat.sh [BUILD_DIR=build/bench-verbs]
#   ROUNDS (16), MSGS (2000), BYTES (8);
#   VARIANTS (default "ours") the HcclSend/Recv configurations, space-
#     separated NAME[:VAR=VAL[,VAR=VAL...]], e.g. "spin:OPENHCCL_SPIN_US=1000"
#     or an older library: "before:LD_LIBRARY_PATH=/path/to/its/lib".
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
# shellcheck source=bench/lib.sh
. bench/lib.sh
build=${1:-build/bench-verbs}
rounds=${ROUNDS:-16}
msgs=${MSGS:-2000}
bytes=${BYTES:-8}
for v in rounds msgs bytes; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "verbs_lat.sh: ${v^^} '${!v}' is not a positive integer" >&2; exit 2; }
done

if ohc_bench_need_vm; then
	build=$(ohc_bench_verbs_build "$top" "$build")
	exec ci/soft-roce/run-vm.sh --rw "$build" --timeout 1800 -- \
		env ROUNDS="$rounds" MSGS="$msgs" BYTES="$bytes" \
		${VARIANTS:+VARIANTS="$VARIANTS"} \
		bash bench/verbs_lat.sh "$build"
fi

dev=${OHC_VM_RDMA_DEV:-$(ls /sys/class/infiniband | head -1)}
gid=${OHC_VM_GID_INDEX:-1}
ip=${OHC_VM_IP:-127.0.0.1}
bench=$build/bench/ohc_verbs_p2p_bench
[ -x "$bench" ] || { echo "no $bench: build it first" >&2; exit 2; }
read -r -a vlist <<<"${VARIANTS:-ours}"

# perftest's server, then its client (a few tries: the server may not
# listen yet); t_avg in us, or - if every try failed
port=18600
pt() {
	local srv v="" try
	for try in 1 2 3; do
		port=$((port + 1))
		timeout 120 "$1" -F -d "$dev" -x "$gid" -s "$bytes" -n "$msgs" \
			-p "$port" >/dev/null 2>&1 &
		srv=$!
		sleep "$try"
		v=$(timeout 120 "$1" -F -d "$dev" -x "$gid" -s "$bytes" \
			-n "$msgs" -p "$port" "$ip" 2>/dev/null |
			awk -v s="$bytes" '$1 == s { print $6 }')
		kill "$srv" 2>/dev/null || true
		wait "$srv" 2>/dev/null || true
		[ -z "$v" ] || break
	done
	echo "${v:--}"
}
ohc() { # VARIANT_ENV
	local envs=() v
	[ -n "$1" ] && IFS=, read -r -a envs <<<"$1"
	v=$(env "${envs[@]}" HCCL_INTRA_ROCE_ENABLE=1 timeout 300 "$bench" \
		"$bytes" "$bytes" "$msgs" 50 lat | awk -v s="$bytes" '$1 == s { print $3 }')
	echo "${v:--}"
}

out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "$dev, $bytes B, $rounds rounds of $msgs messages, us (t_avg; ours: half a round trip)"
for ((r = 0; r < rounds; r++)); do
	line="round $r: ib_write_lat $(pt ib_write_lat) ib_send_lat $(pt ib_send_lat)"
	for v in "${vlist[@]}"; do
		e=""
		[[ "$v" == *:* ]] && e=${v#*:}
		line+=" ${v%%:*} $(ohc "$e")"
	done
	echo "$line" | tee -a "$out"
done
# per tool: best, best / ib_write_lat's best, median of the round ratios
awk '{ for (i = 3; i < NF; i += 2) { k = $i; v = $(i + 1); if (k == "ib_write_lat") w = v;
	if (v == "-") continue; if (!(k in best) || v < best[k]) best[k] = v;
	if (w != "-" && w > 0) print "R", k, v / w } }
	END { for (k in best) print "B", k, best[k] }' "$out" | sort -k2,2 -k3,3g >"$out.s"
wbest=$(awk '$1 == "B" && $2 == "ib_write_lat" { print $3 }' "$out.s")
printf '%-14s %9s %12s %16s\n' tool best_us "over write" "median of rounds"
for k in ib_write_lat ib_send_lat "${vlist[@]%%:*}"; do
	awk -v k="$k" -v w="${wbest:-0}" '
		$1 == "R" && $2 == k { r[n++] = $3 }
		$1 == "B" && $2 == k { b = $3 }
		END { if (b == "") { printf "%-14s %9s\n", k, "-"; exit }
		      over = w > 0 ? sprintf("%.2fx", b / w) : "-"
		      med = n % 2 ? r[(n - 1) / 2] : (r[n / 2 - 1] + r[n / 2]) / 2
		      printf "%-14s %9.2f %12s %16s\n", k, b, over,
			(n ? sprintf("%.2fx", med) : "-") }' "$out.s"
done
rm -f "$out.s"
