#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Selection against every algorithm: for each collective and rank count,
# OpenHCCL's hccl_test tool runs with each algorithm of the op forced
# (HCCL_ALGO="<op>=level0:NA;level1:<name>") and with the automatic
# choice, all interleaved, REPS rounds. The table gives each one's median
# time per size (and its best; "declined": the algorithm does not serve
# this call, e.g. two-level on one host), the fastest forced algorithm,
# the one selection runs (rank 0's OPENHCCL_DEBUG=INFO line) and the
# forced median of that one over the fastest's; '!' marks a size where
# selection runs another algorithm and that ratio is above 1.25 (a miss
# beyond what these machines' noise usually explains: one algorithm's
# medians differ up to 1.5x between the auto and the forced column of
# one run). The algorithms are those hccl_simulate lists for the op and
# rank count. Writes BUILD_DIR/algo-sweep/table.md, the raw runs and
# their logs beside it.
#
# usage: bench/algo_sweep.sh [-n "4 8"] [-o "OPS"] [-b MIN] [-e MAX]
#                            [-f FACTOR] [-r REPS]
#   -n  rank counts (4 8)      -b/-e/-f  sizes (64K, 4M, 4)
#   -o  collectives (allreduce allgather reduce_scatter broadcast reduce)
#   -r  rounds, each running every algorithm once (5)
# ITERS (100), WARMUP (5), BUILD_DIR (build/bench). The machine should be
# quiet: on these 2-core machines one algorithm's medians move 1.5x
# between rounds of the same run when anything else runs.
# In a folder made by `bench/scaling.sh --prepare DIR` (the 16-core device
# machine, nothing installed) it builds nothing: DIR/bin's tools and
# hccl_simulate with DIR/lib64, output in ${OUT:-DIR/out}/algo-sweep.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
nps="4 8"
ops="allreduce allgather reduce_scatter broadcast reduce"
minb=64K
maxb=4M
factor=4
reps=5
while getopts "n:o:b:e:f:r:" opt; do
	case $opt in
	n) nps=$OPTARG ;;
	o) ops=$OPTARG ;;
	b) minb=$OPTARG ;;
	e) maxb=$OPTARG ;;
	f) factor=$OPTARG ;;
	r) reps=$OPTARG ;;
	*) sed -n '2,21p' "$0" >&2; exit 2 ;;
	esac
done
build=${BUILD_DIR:-build/bench}
iters=${ITERS:-100}
warmup=${WARMUP:-5}
for v in reps iters warmup factor; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "algo_sweep.sh: $v '${!v}' is not a positive integer" >&2; exit 2; }
done
for np in $nps; do
	[[ $np =~ ^[1-9][0-9]*$ && $np -ge 2 ]] || { echo "algo_sweep.sh: rank count '$np' is not an integer of at least 2" >&2; exit 2; }
done
minB=$(numfmt --from=iec "$minb") || { echo "algo_sweep.sh: bad size '$minb'" >&2; exit 2; }
numfmt --from=iec "$maxb" >/dev/null || { echo "algo_sweep.sh: bad size '$maxb'" >&2; exit 2; }

tools=()
for op in $ops; do tools+=("$(ohc_bench_tool_of "$op")"); done
if [ -e PREPARED ]; then # a --prepare'd folder: its binaries, no build
	build=$PWD/bin
	LD_LIBRARY_PATH=$(ohc_bench_prepared_ldpath "$PWD")
	export LD_LIBRARY_PATH
	out=${OUT:-$PWD/out}/algo-sweep
else
	cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DOHC_BUILD_TESTS=OFF >"$build.cmake.log" 2>&1 ||
		{ cat "$build.cmake.log"; exit 1; }
	cmake --build "$build" -j"$(nproc)" --target hccl_simulate "${tools[@]}" >"$build.build.log" 2>&1 ||
		{ tail -30 "$build.build.log"; exit 1; }
	out=$build/algo-sweep
fi
sim=$(find "$build" -name hccl_simulate -type f | head -1)
[ -n "$sim" ] || { echo "algo_sweep.sh: no hccl_simulate under $build" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"

# the algorithms of op at np ranks: the model's columns with a number
algos_of() {
	"$sim" --op "$1" --ranks "$2" -b "$minB" -e "$minB" --no-sim |
		awk '$1 == "bytes" { for (i = 2; i <= NF - 2; i++) name[i] = $i; next }
		     name[2] != "" && $1 ~ /^[0-9]+$/ {
			 for (i = 2; i <= NF - 2; i++) if ($i != "-") print name[i]; exit }' |
		sed 's/[*+]//g'
}

hccl_op() { [ "$1" = reduce_scatter ] && echo reducescatter || echo "$1"; }

echo "algo_sweep: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $reps rounds of ops '$ops' at ranks '$nps', $minb-$maxb x$factor" |
	tee "$out/run.txt"
for r in $(seq 1 "$reps"); do
	for np in $nps; do
		for op in $ops; do
			tool=$(find "$build" -name "$(ohc_bench_tool_of "$op")" -type f | head -1)
			for al in auto $(algos_of "$op" "$np"); do
				f=$out/$op.$np.$al.$r
				force=""
				[ "$al" = auto ] || force="$(hccl_op "$op")=level0:NA;level1:$al"
				HCCL_ALGO=$force OPENHCCL_DEBUG=INFO OPENHCCL_LOG_FILE="$f.%r.log" \
					timeout 300 "$tool" -np "$np" -b "$minb" -e "$maxb" -f "$factor" \
					-n "$iters" -w "$warmup" >"$f" 2>"$f.err" || { ohc_bench_why $? "$f.err" "$f" >&2; exit 1; }
			done
			printf '.'
		done
	done
done
echo
/usr/bin/python3 - "$out" <<'EOF' | tee "$out/table.md"
import collections, glob, os, re, statistics, sys
out = sys.argv[1]
t = collections.defaultdict(list)    # (op, np, algo, bytes) -> times
ran = {}                             # (op, np, algo, bytes) -> what ran
for f in glob.glob(os.path.join(out, "*.*.*.*")):
    base = os.path.basename(f)
    if base.endswith((".err", ".log", ".txt", ".md")):
        continue
    op, np, algo, _ = base.split(".")
    for line in open(f):
        p = [x.strip() for x in line.split("|")]
        if len(p) == 5 and p[0].isdigit():
            t[(op, int(np), algo, int(p[0]))].append(float(p[1]))
    if os.path.exists(f + ".0.log"):
        for line in open(f + ".0.log"):
            m = re.search(r"rank 0: (\w+) of (\d+) bytes on \d+ ranks over \w+: (\w+)( in (\d+) slices?)?", line)
            if m and m.group(1).replace("_", "") == op.replace("_", ""):
                ran[(op, int(np), algo, int(m.group(2)))] = (m.group(3), m.group(5))
misses = 0
for op in sorted({k[0] for k in t}):
    for np in sorted({k[1] for k in t if k[0] == op}):
        algos = sorted({k[2] for k in t if k[:2] == (op, np) and k[2] != "auto"})
        sizes = sorted({k[3] for k in t if k[:2] == (op, np)})
        print(f"\n{op}, {np} ranks: median us (best)\n")
        print("| bytes | auto | " + " | ".join(algos) + " | fastest | selection runs | it / fastest |")
        print("|---:|---:|" + "---:|" * len(algos) + "---|---|---:|")
        for b in sizes:
            def served(a):  # the forced algorithm ran, not a fallback
                return a == "auto" or ran.get((op, np, a, b), (a,))[0] == a
            def cell(a):
                v = t.get((op, np, a, b))
                if not v:
                    return "-"
                if not served(a):
                    return "declined"
                return f"{statistics.median(v):.1f} ({min(v):.1f})"
            meds = {a: statistics.median(t[(op, np, a, b)]) for a in algos
                    if t.get((op, np, a, b)) and served(a)}
            best = min(meds, key=meds.get)
            sel, sl = ran.get((op, np, "auto", b), ("?", None))
            ratio = meds[sel] / meds[best] if sel in meds else float("nan")
            miss = sel != best and ratio > 1.25
            misses += miss
            print(f"| {b} | {cell('auto')} | " + " | ".join(cell(a) for a in algos) +
                  f" | {best} | {sel}{' in ' + sl + ' slices' if sl and sl != '1' else ''}"
                  f" | {ratio:.2f}{' !' if miss else ''} |")
print(f"\n{misses} size(s) where selection runs an algorithm whose forced median is above 1.25x the fastest's")
EOF
