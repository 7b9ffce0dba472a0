#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The libFuzzer targets of test/fuzz: build them with clang (ASan + UBSan)
# in build/fuzz, replay every input of test/fuzz/corpus (seeds and kept
# crashes), then fuzz each target for SECONDS starting from its corpus.
# Exit status 0 only when no input crashed, hung, leaked or tripped a
# sanitizer; otherwise the failing target's log tail and the input that
# did it (build/fuzz/artifacts/) are shown.
#
# Usage: ci/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#   ci/fuzz.sh               30 s per target (about 2.5 min on 2 cores)
#   ci/fuzz.sh 0             build and replay the corpora only
#   ci/fuzz.sh 3600 shm_ring an hour on one target
# Environment:
#   OHC_FUZZ_JOBS   targets fuzzed at once (default: nproc)
#   OHC_FUZZ_MERGE  1: merge what the run found into test/fuzz/corpus
#                   (libFuzzer -merge=1 keeps only inputs adding coverage)
#   OHC_FUZZ_ARGS   more libFuzzer flags, e.g. "-only_ascii=1"
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
secs=${1:-30}
shift || true
jobs=${OHC_FUZZ_JOBS:-$(nproc)}
bdir=build/fuzz
corpus=test/fuzz/corpus

if ! command -v clang >/dev/null; then
	bash ci/deps.sh fuzz
fi
CC=clang CXX=clang++ cmake -S "$top" -B "$bdir" -DOHC_FUZZ=ON \
	-DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$bdir" -j"$(nproc)"

if [ $# -gt 0 ]; then
	targets=("$@")
else
	targets=()
	for f in test/fuzz/*.c; do
		targets+=("$(basename "$f" .c)")
	done
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$bdir/logs" "$bdir/artifacts" "$bdir/corpus"

# Extra seed directories of a target (read, never written).
seeds_of() {
	echo "$corpus/$1"
	if [ "$1" = ranktable ]; then
		echo test/data/ranktables
	fi
}

dict_of() {
	if [ -f "test/fuzz/$1.dict" ]; then
		echo "-dict=test/fuzz/$1.dict"
	fi
}

fail=0
report() { # target log what
	echo "FAIL: fuzz_$1: $3 (log $2)" >&2
	grep -a -E 'ERROR:|runtime error|fuzz check failed|SUMMARY|Test unit written|artifact_prefix' "$2" |
		head -20 >&2 || true
	tail -n 30 "$2" >&2
	fail=1
}

echo "== replay: every file of $corpus =="
for t in "${targets[@]}"; do
	log=$bdir/logs/$t.replay.log
	mapfile -t dirs < <(seeds_of "$t")
	# -runs=0: load (execute) every input once, fuzz nothing
	if ! "$bdir/test/fuzz/fuzz_$t" -runs=0 -timeout=20 \
		-artifact_prefix="$bdir/artifacts/$t-" "${dirs[@]}" >"$log" 2>&1; then
		report "$t" "$log" "a corpus input fails"
		continue
	fi
	n=$(find "${dirs[@]}" -type f | wc -l)
	printf '  %-12s %4d inputs ok\n' "$t" "$n"
done
if [ "$fail" != 0 ] || [ "$secs" = 0 ]; then
	exit "$fail"
fi

echo "== fuzz: ${secs} s per target, $jobs at once =="
run_one() {
	local t=$1 log=$bdir/logs/$t.log work=$bdir/corpus/$t
	local dirs
	mkdir -p "$work"
	mapfile -t dirs < <(seeds_of "$t")
	# shellcheck disable=SC2046,SC2086
	"$bdir/test/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=20 \
		-print_final_stats=1 -artifact_prefix="$bdir/artifacts/$t-" \
		$(dict_of "$t") ${OHC_FUZZ_ARGS:-} "$work" "${dirs[@]}" \
		>"$log" 2>&1
}
pids=()
names=()
for t in "${targets[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		sleep 1
	done
	run_one "$t" &
	pids+=($!)
	names+=("$t")
done
for i in "${!pids[@]}"; do
	t=${names[$i]}
	log=$bdir/logs/$t.log
	if wait "${pids[$i]}"; then
		runs=$(grep -a -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
		rate=$(grep -a -E '^stat::average_exec_per_sec' "$log" | awk '{print $2}')
		cov=$(grep -a -E '^#[0-9]+.*DONE' "$log" | tail -1 | sed -E 's/.*cov: ([0-9]+).*corp: ([0-9]+).*/cov \1, corpus \2/')
		printf '  %-12s %9s runs, %6s/s, %s\n' "$t" "${runs:-?}" "${rate:-?}" "${cov:-?}"
	else
		report "$t" "$log" "crash, hang, leak or sanitizer report"
	fi
done

if [ "${OHC_FUZZ_MERGE:-0}" = 1 ] && [ "$fail" = 0 ]; then
	echo "== merge: new coverage into $corpus =="
	for t in "${targets[@]}"; do
		"$bdir/test/fuzz/fuzz_$t" -merge=1 -timeout=20 "$corpus/$t" \
			"$bdir/corpus/$t" >"$bdir/logs/$t.merge.log" 2>&1 ||
			report "$t" "$bdir/logs/$t.merge.log" "merge failed"
		printf '  %-12s %4d files\n' "$t" "$(find "$corpus/$t" -type f | wc -l)"
	done
fi
exit "$fail"
