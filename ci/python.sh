#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python suite (python/tests) against a build tree's libhccl.so.1:
# builds hccl.torch's C++ extension once into BUILD_DIR/torch_ext (the
# first time takes minutes), then runs pytest with Debian's /usr/bin/python3
# (the pyenv python3 on PATH does not see Debian's numpy and torch).
# Usage: ci/python.sh [BUILD_DIR] [pytest args...]   (default build/ci)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
build=${1:-build/ci}
shift || true
[ -e "$build/src/libhccl.so.1" ] || {
	echo "ci/python.sh: no $build/src/libhccl.so.1 (build first)" >&2
	exit 1
}
export OPENHCCL_LIB_DIR=$top/$build/src
export OPENHCCL_TORCH_BUILD_DIR=$top/$build/torch_ext
export PYTHONPATH=$top/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
py=/usr/bin/python3
echo "ci/python.sh: building hccl.torch's extension in $OPENHCCL_TORCH_BUILD_DIR"
$py -m hccl.torch.build >/dev/null
$py -m pytest -q -p no:cacheprovider --durations=15 python/tests "$@"
