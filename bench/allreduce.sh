#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: a local multi-rank AllReduce benchmark (fp32 sum) with
# OpenHCCL's all_reduce_test, beside Open MPI's MPI_Allreduce over shared
# memory (btl vader,self) in the same run, printed as hccl_test columns
# plus a side-by-side markdown table of busbw and ratios.
# usage: bench/allreduce.sh [NRANKS=2] [MINBYTES=8] [MAXBYTES=64M]
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
np=${1:-2}
minb=${2:-8}
maxb=${3:-64M}
iters=${ITERS:-20}
warmup=${WARMUP:-5}
build=${BUILD_DIR:-build/bench}

bash ci/deps.sh bench
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=Release -DOHC_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null

tobytes() { numfmt --from=iec "$1"; }
minB=$(tobytes "$minb")
maxB=$(tobytes "$maxb")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== OpenHCCL all_reduce_test -np $np (shared memory) =="
"$build"/tools/all_reduce_test -np "$np" -b "$minB" -e "$maxB" -f 2 \
	-d fp32 -o sum -n "$iters" -w "$warmup" | tee "$out/ohc.txt"

echo
echo "== Open MPI MPI_Allreduce -np $np (--mca btl vader,self) =="
mpicc -O2 -o "$out/mpi_allreduce" bench/peers/mpi_allreduce.c
mpirun --allow-run-as-root --oversubscribe -np "$np" --mca pml ob1 \
	--mca btl vader,self "$out/mpi_allreduce" "$minB" "$maxB" 2 \
	"$iters" "$warmup" | tee "$out/ompi.txt"

echo
echo "== side by side (busbw GB/s; ratio = OpenHCCL / Open MPI) =="
echo "| bytes | OpenHCCL us | Open MPI us | OpenHCCL busbw | Open MPI busbw | busbw ratio | latency ratio (OMPI/OHC) |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
join -j1 <(awk -F'|' '$1 ~ /^[0-9]/ {gsub(/ /,""); print $1, $2, $5}' "$out/ohc.txt" | sort -k1,1) \
	<(awk -F'|' '$1 ~ /^[0-9]/ {gsub(/ /,""); print $1, $2, $5}' "$out/ompi.txt" | sort -k1,1) |
	sort -n | awk '{ r = ($5 > 0) ? $3 / $5 : 0; l = ($2 > 0) ? $4 / $2 : 0;
		printf "| %s | %.2f | %.2f | %.3f | %.3f | %.2fx | %.2fx |\n", $1, $2, $4, $3, $5, r, l }'
