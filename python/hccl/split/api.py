# SPDX-License-Identifier: Apache-2.0
"""HCCL's gradient split strategies (spec section 6), over libhccl's
HcomSetGradFusionByIndex / HcomSetGradFusionBySize.

A strategy is kept per group (in the library, and here for
``hccl.all_reduce_buckets``, which fuses gradients into the segments it
defines). By size wins over by index; with neither set, a group splits
96.54 % / 3.46 % by size, as HCCL does.
"""
import ctypes
import math
import threading

from .. import _lib, _world
from ..manage.api import WORLD, check_group

SEGMENTS_MAX = 8
DEFAULT_SIZES = (96.54, 3.46)
_U32_MAX = 0xFFFFFFFF

__all__ = ["set_split_strategy_by_idx", "set_split_strategy_by_size",
           "get_split_strategy"]

_lock = threading.Lock()
_strategies = {}  # group -> {"idx": [...] or None, "size": [...] or None}


def set_split_strategy_by_idx(idxList, group=WORLD):
    """Split the group's gradients after the given indices: segment k
    ends with gradient idxList[k] (strictly ascending ints, 1 to 8 of
    them)."""
    name = check_group(group)
    if not isinstance(idxList, (list, tuple)):
        raise ValueError("idxList must be a list of ints, not %s"
                         % type(idxList).__name__)
    if not idxList:
        raise ValueError("idxList is empty")
    if len(idxList) > SEGMENTS_MAX:
        raise ValueError("idxList has %d segments, more than %d"
                         % (len(idxList), SEGMENTS_MAX))
    for i, v in enumerate(idxList):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError("idxList[%d] must be an int, not %s"
                             % (i, type(v).__name__))
        if v < 0 or v > _U32_MAX:
            raise ValueError("idxList[%d] = %d is not in [0, %d]"
                             % (i, v, _U32_MAX))
        if i and v <= idxList[i - 1]:
            raise ValueError("idxList[%d] = %d after idxList[%d] = %d: the "
                             "indices must be strictly ascending"
                             % (i, v, i - 1, idxList[i - 1]))
    _world.ensure()
    arr = (ctypes.c_uint32 * len(idxList))(*idxList)
    _lib.check("HcomSetGradFusionByIndex",
               _lib.hccl().HcomSetGradFusionByIndex(name, len(idxList), arr),
               "group '%s'" % group)
    with _lock:
        _strategies.setdefault(group, {"idx": None, "size": None})[
            "idx"] = list(idxList)


def set_split_strategy_by_size(dataSizeList, group=WORLD):
    """Split the group's gradients by data size: segment k holds
    dataSizeList[k] percent of the bytes (non-negative numbers summing to
    100, 1 to 8 of them)."""
    name = check_group(group)
    if not isinstance(dataSizeList, (list, tuple)):
        raise ValueError("dataSizeList must be a list of numbers, not %s"
                         % type(dataSizeList).__name__)
    if not dataSizeList:
        raise ValueError("dataSizeList is empty")
    if len(dataSizeList) > SEGMENTS_MAX:
        raise ValueError("dataSizeList has %d segments, more than %d"
                         % (len(dataSizeList), SEGMENTS_MAX))
    for i, v in enumerate(dataSizeList):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError("dataSizeList[%d] must be an int or float, "
                             "not %s" % (i, type(v).__name__))
        if not math.isfinite(v) or v < 0:
            raise ValueError("dataSizeList[%d] = %r is not a non-negative "
                             "percentage" % (i, v))
    total = math.fsum(dataSizeList)
    if abs(total - 100.0) > 1e-6:
        raise ValueError("dataSizeList sums to %r percent, not 100" % total)
    _world.ensure()
    arr = (ctypes.c_float * len(dataSizeList))(*dataSizeList)
    _lib.check("HcomSetGradFusionBySize",
               _lib.hccl().HcomSetGradFusionBySize(name, len(dataSizeList),
                                                   arr),
               "group '%s'" % group)
    with _lock:
        _strategies.setdefault(group, {"idx": None, "size": None})[
            "size"] = [float(v) for v in dataSizeList]


def get_split_strategy(group=WORLD):
    """("size", [percent, ...]) or ("idx", [last index, ...]): the strategy
    that applies to group (by size wins; the default when none was
    set)."""
    check_group(group)
    with _lock:
        s = _strategies.get(group)
        if s and s["size"] is not None:
            return ("size", list(s["size"]))
        if s and s["idx"] is not None:
            return ("idx", list(s["idx"]))
    return ("size", list(DEFAULT_SIZES))


def _forget(group):
    with _lock:
        _strategies.pop(group, None)


def _forget_all():
    with _lock:
        _strategies.clear()
