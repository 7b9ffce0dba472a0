# SPDX-License-Identifier: Apache-2.0
"""OpenHCCL for Python: HCCL's ``hccl.manage.api`` / ``hccl.split.api``
over libhccl.so.1 (ctypes), collectives on numpy arrays, a bucketed
gradient AllReduce, a launcher (``python3 -m hccl.run``) and, with
``import hccl.torch``, a torch.distributed backend named "hccl".

The world group ("hccl_world_group") is built on first use from
RANK_TABLE_FILE + RANK_ID (the launcher sets them), or is this process
alone; ``hccl.init()`` builds it explicitly and ``hccl.finalize()`` (also
run at exit) tears everything down.
"""
import atexit as _atexit

from . import _exitmark
from ._lib import HcclError
from ._world import WORLD, init, finalize, initialized
from . import manage, split  # noqa: F401

__version__ = "0.1.0"

_atexit.register(_exitmark.mark)

_COLLECTIVE = ("ReduceOp", "all_reduce", "reduce", "broadcast", "all_gather",
               "reduce_scatter", "all_to_all", "all_to_all_v", "send", "recv",
               "barrier")
_FUSION = ("all_reduce_buckets", "plan_buckets")


def __getattr__(name):
    # numpy is only needed by the collectives: import them on first use.
    if name in _COLLECTIVE:
        from . import collective
        return getattr(collective, name)
    if name in _FUSION:
        from . import fusion
        return getattr(fusion, name)
    raise AttributeError("module 'hccl' has no attribute %r" % name)

__all__ = ["HcclError", "WORLD", "init", "finalize", "initialized",
           "manage", "split", "ReduceOp", "all_reduce", "reduce",
           "broadcast", "all_gather", "reduce_scatter", "all_to_all",
           "all_to_all_v", "send", "recv", "barrier", "all_reduce_buckets",
           "plan_buckets"]
