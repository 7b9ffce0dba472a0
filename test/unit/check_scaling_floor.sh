#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/scaling.sh's exchange floor: ohc_membw_bench -x prints "floor_us
# US" (with two CPUs to run on, a time above 0 and below 1 ms; with one,
# a comment and no such line), and bench/analysis.py's report of a made-up
# scaling folder names the floor and how far above it each
# implementation's smallest 2-rank AllReduce came; not in a loaded run
# (scaling.sh -L measures none: its busy processes share the CPUs).
# usage: check_scaling_floor.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
bench=$build/bench/ohc_membw_bench
# shellcheck source-path=SCRIPTDIR source=check_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
need "$bench" ohc_membw_bench

out=$("$bench" -x -r 1 -s 1 1)
if [ "$(nproc)" -ge 2 ]; then
	us=$(awk '$1 == "floor_us" { print $2 }' <<<"$out")
	[ -n "$us" ] || fail "no floor_us line"
	awk -v us="$us" 'BEGIN { exit !(us > 0 && us < 1000) }' ||
		fail "floor_us $us is not in (0, 1000) us"
else
	grep -q "^# exchange floor: needs two CPUs" <<<"$out" ||
		fail "one CPU: no 'needs two CPUs' comment"
fi
out=$(taskset -c "$(taskset -pc $$ | sed 's/.*: //; s/[,-].*//')" \
	"$bench" -x -r 1 -s 1 1)
grep -q "^# exchange floor: needs two CPUs" <<<"$out" ||
	fail "bound to one CPU: no 'needs two CPUs' comment"
! grep -q "^floor_us" <<<"$out" || fail "bound to one CPU: a floor_us line"

mkdir -p "$d/raw"
printf 'nps=2\nops=allreduce\nreps=1\n' >"$d/meta"
printf '# copy\nfloor_us 0.250\n1 10.00 10.00\n2 18.00 9.00\n' >"$d/membw"
for impl in ohc:0.40 ompi:0.55; do
	{
		echo "data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result: | bus_bandwidth(GB/s):"
		echo "8                 | ${impl#*:}           | 0.02000              | success       | 0.02000"
		echo "1024              | 2.00           | 0.51200              | success       | 0.51200"
	} >"$d/raw/${impl%%:*}.allreduce.2.1"
done
out=$(python3 "$src/bench/analysis.py" scaling "$d")
grep -q "Exchange floor .*: 0.250 us\. 8 B AllReduce at 2 ranks: OpenHCCL 0.40 us (0.15 above it), Open MPI 0.55 us (0.30 above it)\." <<<"$out" ||
	fail "no floor line with 0.15 and 0.30 us above it"
printf 'busy=2\n' >>"$d/meta"
out=$(python3 "$src/bench/analysis.py" scaling "$d")
! grep -q "Exchange floor" <<<"$out" || fail "a floor line in a loaded run"
printf 'nps=2\nops=allreduce\nreps=1\n' >"$d/meta"
rm "$d/membw"
printf '1 10.00 10.00\n' >"$d/membw"
out=$(python3 "$src/bench/analysis.py" scaling "$d")
! grep -q "Exchange floor" <<<"$out" || fail "a floor line without floor_us"
echo "ok"
