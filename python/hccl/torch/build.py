# SPDX-License-Identifier: Apache-2.0
"""python3 -m hccl.torch.build: build hccl.torch's C++ extension now (it
is otherwise built on first import) and print where it went."""
import sys


def main():
    from . import _build, load
    load(verbose="-v" in sys.argv[1:])
    print(_build.build_dir())
    return 0


if __name__ == "__main__":
    sys.exit(main())
