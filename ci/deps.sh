#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install the Debian packages OpenHCCL needs to build, test and benchmark,
# skipping what is already there.
# Usage: ci/deps.sh [build|bench|python|slurm|plot|fuzz|all]
set -euo pipefail

build_pkgs=(build-essential cmake pkg-config libibverbs-dev
	libnuma-dev libjansson-dev libcriterion-dev)
bench_pkgs=(openmpi-bin libopenmpi-dev)
# python/ (hccl package, hccl.torch's C++ extension, its pytest suite; the
# launcher's tests run jobs under mpirun and under a one-node Slurm of
# their own). For /usr/bin/python3.
python_pkgs=(python3-numpy python3-pytest python3-torch libtorch-dev
	python3-pybind11 openmpi-bin slurmctld slurmd slurm-client)
# the Soft-RoCE VM stages; gdb prints a hung test rank's stacks
# (OHC_TEST_HANG_BT, ci/soft-roce/vm-suites.sh)
vm_pkgs=(rdma-core ibverbs-providers ibverbs-utils perftest gdb)
# a one-node Slurm for test/tools/slurm.sh, and MPICH's mpirun (tools.*)
slurm_pkgs=(slurmctld slurmd slurm-client mpich)
# bench/allreduce.sh's plot (Debian's matplotlib, for /usr/bin/python3)
plot_pkgs=(python3-matplotlib)
# ci/fuzz.sh: clang with libFuzzer and the sanitizer runtimes
fuzz_pkgs=(clang libclang-rt-14-dev)

case "${1:-all}" in
build) want=("${build_pkgs[@]}") ;;
bench) want=("${build_pkgs[@]}" "${bench_pkgs[@]}") ;;
python) want=("${build_pkgs[@]}" "${python_pkgs[@]}") ;;
slurm) want=("${slurm_pkgs[@]}") ;;
plot) want=("${plot_pkgs[@]}") ;;
fuzz) want=("${build_pkgs[@]}" "${fuzz_pkgs[@]}") ;;
all) want=("${build_pkgs[@]}" "${bench_pkgs[@]}" "${python_pkgs[@]}"
	"${vm_pkgs[@]}" "${slurm_pkgs[@]}" "${fuzz_pkgs[@]}") ;;
*) echo "usage: $0 [build|bench|python|slurm|plot|fuzz|all]" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
echo "ci/deps.sh: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
