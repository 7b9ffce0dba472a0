#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Communicator init against the rank count on this host: OpenHCCL
# (ohc_init_scale_bench: N forked ranks over shared memory, from
# HcclCommInitRootInfo to the end of the first 8 B AllReduce) beside Open
# MPI (mpirun of bench/peers/mpi_init.c: from before MPI_Init to the end of
# its first AllReduce, and mpirun's whole wall time), with resident memory
# (RSS, Pss) per process. Not a test; numbers go to bench/README.md.
#
# Usage: bench/init_scale.sh [RANKS...]   (default: 2 4 8 16 32 64)
# Environment: BUILD_DIR (default build/bench), OUT (default
# $BUILD_DIR/init_scale.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bdir=${BUILD_DIR:-build/bench}
out=${OUT:-$bdir/init_scale.md}
ranks=("$@")
[ ${#ranks[@]} -gt 0 ] || ranks=(2 4 8 16 32 64)

if ! command -v mpicc.openmpi >/dev/null; then
	bash ci/deps.sh bench
fi
cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$bdir" -j"$(nproc)" --target ohc_init_scale_bench >/dev/null
mkdir -p "$bdir/peers"
mpicc.openmpi -O2 -o "$bdir/peers/mpi_init_ompi" bench/peers/mpi_init.c

{
	echo "Init against ranks, $(date -u +%F), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo
	echo "OpenHCCL:"
	echo
	"$bdir/bench/ohc_init_scale_bench" "${ranks[@]}"
	echo
	echo "Open MPI $(mpirun.openmpi --version 2>/dev/null | head -1 | awk '{print $NF}'):"
	echo
	echo "| ranks | job wall ms | init ms median | init ms max | RSS MiB median | Pss MiB median | peak RSS MiB max |"
	echo "|---:|---:|---:|---:|---:|---:|---:|"
	for n in "${ranks[@]}"; do
		t0=$(date +%s%N)
		row=$(timeout 600 mpirun.openmpi --allow-run-as-root --oversubscribe \
			-np "$n" "$bdir/peers/mpi_init_ompi" 2>/dev/null || echo "failed | | | | |")
		t1=$(date +%s%N)
		echo "| $n | $(((t1 - t0) / 1000000)) | $row"
	done
} | tee "$out"
