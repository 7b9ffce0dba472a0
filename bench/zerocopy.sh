#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Zero-copy vs staged AllGather, AllReduce and ReduceScatter over shared
# memory, same run (Release build); over verbs with HCCL_INTRA_ROCE_ENABLE=1
# in the Soft-RoCE VM. ratio = staged time / zero-copy time.
# usage: bench/zerocopy.sh [NRANKS=2] [MINBYTES=1M] [MAXBYTES=64M] [ITERS=20]
#                          [OPS=allgather,allreduce,reducescatter]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build/bench}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DOHC_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target ohc_zerocopy_bench >/dev/null
"$build"/bench/ohc_zerocopy_bench "${1:-2}" \
	"$(numfmt --from=iec "${2:-1M}")" "$(numfmt --from=iec "${3:-64M}")" \
	"${4:-20}" "${5:-allgather,allreduce,reducescatter}"
