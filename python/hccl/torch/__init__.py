# SPDX-License-Identifier: Apache-2.0
"""torch.distributed backend "hccl" for CPU tensors.

    import torch.distributed as dist
    import hccl.torch  # registers the backend
    dist.init_process_group("hccl")  # env:// (torchrun, python3 -m hccl.run)

Collectives: all_reduce (SUM, PRODUCT, MIN, MAX), broadcast, reduce,
all_gather (list and into one tensor), reduce_scatter (list and from one
tensor), all_to_all / all_to_all_single (with splits), send / recv /
isend / irecv / batch_isend_irecv, barrier, gather, scatter,
all_reduce_coalesced. Works are asynchronous: the
operations run on an acl stream of the group; ``wait()`` synchronizes it,
and a work's future completes on the group's progress thread (what
DistributedDataParallel uses). Errors and timeouts raise RuntimeError
with HCCL's text. See hccl/torch/csrc/process_group_hccl.cpp for the
rules (isend/irecv start when waited on or at the next collective).

The C++ extension is built once (minutes), on first use or with
``python3 -m hccl.torch.build``, and cached; see ``hccl.torch._build``.
"""
import sys as _sys

import torch.distributed as _dist

from . import _build

BACKEND = "hccl"
_C = None


def load(verbose=False):
    """The C++ extension, built first if needed (see hccl.torch._build)."""
    global _C
    if _C is None:
        if not _build.is_built():
            _sys.stderr.write("hccl.torch: building the C++ extension into "
                              "%s (first use: minutes)\n" % _build.build_dir())
        _C = _build.load(verbose=verbose)
    return _C


def _create(store, rank, size, timeout):
    return load().create_process_group(store, rank, size, timeout)


if BACKEND.upper() not in _dist.Backend._plugins:
    _dist.Backend.register_backend(BACKEND, _create)

if _build.is_built():
    load()  # cheap, and a broken build shows at import

__all__ = ["BACKEND", "load"]
