#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What profiling costs: all_reduce_test run without and with
# OPENHCCL_PROFILE, interleaved (off, on, off, on, ...) so that a busy
# machine's swings hit both alike; prints the medians, the ratio of the
# medians and the median of the pairs' ratios.
#
# usage: bench/prof_overhead.sh [SIZE [ITERS [PAIRS [RANKS]]]]
#        (default 1M 300 20 2)
# env:   OHC_BUILD  the build directory (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-1M} iters=${2:-300} pairs=${3:-20} ranks=${4:-2}
tool=${OHC_BUILD:-build}/tools/all_reduce_test
[ -x "$tool" ] || { echo "no $tool: build first" >&2; exit 1; }
tmp=$(mktemp -d /tmp/ohc_prof_overhead_XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# the average time (us) of the one size's row
run() {
	"$@" "$tool" -np "$ranks" -b "$size" -e "$size" -n "$iters" -w 30 |
		awk '$1 ~ /^[0-9]+$/ && $2 == "|" {print $3; exit}'
}

for ((i = 0; i < pairs; i++)); do
	off=$(run env)
	on=$(run env OPENHCCL_PROFILE="$tmp/p$i")
	[ -n "$off" ] && [ -n "$on" ] || { echo "a run failed" >&2; exit 1; }
	echo "$off $on"
	rm -rf "$tmp/p$i"
done | awk -v size="$size" -v iters="$iters" -v ranks="$ranks" '
	function median(a, n,   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
				t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
			}
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	{ n++; off[n] = $1; on[n] = $2; r[n] = $2 / $1 - 1 }
	END {
		mo = median(off, n); mn = median(on, n); mr = median(r, n)
		printf "AllReduce %s, %d ranks, -n %d, %d pairs: off %.2f us, " \
		       "on %.2f us (medians): %+.1f %%; median of the pairs: " \
		       "%+.1f %%\n", size, ranks, iters, n, mo, mn,
		       (mn / mo - 1) * 100, mr * 100
	}'
