#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: a local multi-rank AllReduce benchmark (fp32 sum) with
# OpenHCCL's all_reduce_test beside Open MPI's MPI_Allreduce over shared
# memory (btl vader,self) in the same run, printed as hccl_test columns
# plus a side-by-side markdown table of times, busbw and ratios (also in
# build/bench/allreduce.md). bench/compare.sh does the same for more
# collectives, rank counts and peers.
# usage: bench/allreduce.sh [NRANKS=2] [MINBYTES=8] [MAXBYTES=64M]
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash bench/compare.sh -n "${1:-2}" -b "${2:-8}" -e "${3:-64M}" \
	-o allreduce -p ompi -P -O "${BUILD_DIR:-build/bench}/allreduce.md"
