# SPDX-License-Identifier: Apache-2.0
"""python3 -m hccl.torch.build: build hccl.torch's C++ extension now (it
is otherwise built on first import) and print where it went."""
import sys


def main():
    import torch
    from . import _build
    _build.load(verbose="-v" in sys.argv[1:])
    print(_build.build_dir(torch.__version__))
    return 0


if __name__ == "__main__":
    sys.exit(main())
