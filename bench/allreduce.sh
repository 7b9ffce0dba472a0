#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: a local multi-rank AllReduce benchmark (fp32 sum) with
# OpenHCCL's all_reduce_test beside Open MPI's MPI_Allreduce over shared
# memory (btl vader,self) in the same run. Each implementation runs REPS
# times, interleaved, so every size has REPS samples: the table gives
# their median time and spread (min-max), busbw from the median, and the
# ratio; it names the versions, the CPU and the kernel. Writes
# build/bench/allreduce.md (the table), allreduce.png (busbw against size,
# the median with the min-max band, both implementations) and
# allreduce.json (every sample). Progress is shown as it builds and runs.
# bench/compare.sh does more collectives, rank counts and peers.
# usage: bench/allreduce.sh [NRANKS=2] [MINBYTES=8] [MAXBYTES=64M]
#   REPS (5), ITERS (20), WARMUP (5), BUILD_DIR (build/bench)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
np=${1:-2} minb=${2:-8} maxb=${3:-64M}
reps=${REPS:-5} iters=${ITERS:-20} warmup=${WARMUP:-5}
build=${BUILD_DIR:-build/bench}
out=$build/allreduce
for v in np reps iters warmup; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "allreduce.sh: $v '${!v}' is not a positive integer" >&2; exit 2; }
done
minB=$(numfmt --from=iec "$minb") || { echo "allreduce.sh: bad MINBYTES '$minb'" >&2; exit 2; }
maxB=$(numfmt --from=iec "$maxb") || { echo "allreduce.sh: bad MAXBYTES '$maxb'" >&2; exit 2; }

step() { printf '\n== %s ==\n' "$*"; }

step "packages (ci/deps.sh bench plot)"
bash ci/deps.sh bench
bash ci/deps.sh plot
# Debian's matplotlib is for Debian's python (python3 on PATH may be another)
py=/usr/bin/python3

step "build: OpenHCCL (Release) in $build, Open MPI's peer"
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=Release -DOHC_BUILD_TESTS=OFF \
	>"$build.cmake.log" 2>&1 || { cat "$build.cmake.log"; exit 1; }
# cmake's own [ NN%] lines are the progress
cmake --build "$build" -j"$(nproc)" --target all_reduce_test 2>&1 |
	grep --line-buffered -E '^\[ *[0-9]+%\]|error|warning' || true
[ -x "$build/tools/all_reduce_test" ] || { echo "allreduce.sh: build failed" >&2; exit 1; }
mkdir -p "$build/peers"
mpicc.openmpi -O2 -o "$build/peers/mpi_coll_ompi" bench/peers/mpi_coll.c
echo "built: $build/tools/all_reduce_test, $build/peers/mpi_coll_ompi"

rm -rf "$out"
mkdir -p "$out"
{
	echo "openhccl=$("$build/tools/all_reduce_test" --version | awk '{print $NF}')"
	echo "openhccl_commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "ompi=$(mpirun.openmpi --version 2>/dev/null | head -1 | awk '{print $NF}')"
	echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "cpus=$(nproc)"
	echo "kernel=$(uname -r)"
	echo "host=$(hostname)"
	echo "date=$(date -u +%FT%TZ)"
	echo "ranks=$np"
	echo "reps=$reps"
	echo "iters=$iters"
	echo "warmup=$warmup"
} >"$out/meta"
nsizes=$(awk -v a="$minB" -v b="$maxB" 'BEGIN { n = 0; for (s = a; s <= b; s *= 2) n++; print n }')
total=$((2 * reps))
k=0
for ((rep = 1; rep <= reps; rep++)); do
	k=$((k + 1))
	step "[$k/$total] OpenHCCL all_reduce_test -np $np, run $rep of $reps ($nsizes sizes)"
	timeout 900 "$build/tools/all_reduce_test" -np "$np" -b "$minB" -e "$maxB" \
		-f 2 -d fp32 -o sum -n "$iters" -w "$warmup" \
		--json "$out/ohc.$rep.json"
	k=$((k + 1))
	step "[$k/$total] Open MPI MPI_Allreduce -np $np, run $rep of $reps"
	timeout 900 mpirun.openmpi --allow-run-as-root --oversubscribe -np "$np" \
		--mca pml ob1 --mca btl vader,self \
		"$build/peers/mpi_coll_ompi" allreduce "$minB" "$maxB" 2 "$iters" \
		"$warmup" | tee "$out/ompi.$rep.txt"
done

step "report"
"$py" bench/allreduce_report.py "$out" "$build/allreduce.md" \
	"$build/allreduce.png" "$build/allreduce.json"
echo
cat "$build/allreduce.md"
echo
echo "table: $build/allreduce.md  plot: $build/allreduce.png  samples: $build/allreduce.json"
