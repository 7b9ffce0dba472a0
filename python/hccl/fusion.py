# SPDX-License-Identifier: Apache-2.0
"""Bucketed gradient AllReduce: the group's split strategy
(``hccl.split.api``) cuts a list of gradients into segments, and each
segment travels as one fused AllReduce.

Segments, for n gradients in list order:

* by index ``[i0, i1, ...]``: segment k ends with gradient ``ik``
  (indices past the end are clipped; gradients after the last index form
  one more segment);
* by size ``[p0, p1, ...]`` percent: gradients fill segment k until the
  bytes so far reach ``p0 + ... + pk`` percent of the total; the gradient
  that reaches a boundary closes its segment;
* neither set: by size ``[96.54, 3.46]`` (HCCL's default).

Empty segments are dropped. A segment whose gradients have several dtypes
takes one AllReduce per dtype.
"""
import numpy as np

from . import collective
from .manage.api import WORLD, check_group
from .split import api as split_api

__all__ = ["plan_buckets", "all_reduce_buckets"]


def _check_list(arrays):
    if not isinstance(arrays, (list, tuple)):
        raise TypeError("arrays must be a list of numpy arrays, not %s"
                        % type(arrays).__name__)
    for i, a in enumerate(arrays):
        if not isinstance(a, np.ndarray):
            raise TypeError("arrays[%d] is a %s, not a numpy.ndarray"
                            % (i, type(a).__name__))


def plan_buckets(arrays, group=WORLD):
    """The segments (lists of indices into arrays) that group's strategy
    makes of arrays."""
    check_group(group)
    _check_list(arrays)
    n = len(arrays)
    kind, vals = split_api.get_split_strategy(group)
    buckets = []
    if kind == "idx":
        start = 0
        for last in vals:
            end = min(last, n - 1)
            if end >= start:
                buckets.append(list(range(start, end + 1)))
                start = end + 1
        if start < n:
            buckets.append(list(range(start, n)))
        return buckets
    sizes = [a.nbytes for a in arrays]
    total = float(sum(sizes))
    bounds, acc = [], 0.0
    for p in vals:
        acc += p
        bounds.append(total * acc / 100.0)
    slack = total * 1e-9
    segs = [[] for _ in vals]
    cur, acc = 0, 0.0
    for i, s in enumerate(sizes):
        segs[cur].append(i)
        acc += s
        while cur < len(vals) - 1 and acc >= bounds[cur] - slack:
            cur += 1
    return [s for s in segs if s]


def all_reduce_buckets(arrays, op="sum", group=WORLD, average=False):
    """AllReduce every array of the list in place, one fused AllReduce per
    segment of the group's split strategy (and dtype). average=True then
    divides by the group size (floating dtypes only). Returns the
    segments used (lists of indices)."""
    buckets = plan_buckets(arrays, group)
    for i, a in enumerate(arrays):
        if not a.flags.writeable:
            raise ValueError("arrays[%d] is read-only; gradients are reduced "
                             "in place" % i)
        if average and a.dtype.kind not in "fc" and a.dtype.name != \
                "bfloat16":
            raise TypeError("average=True needs floating arrays; arrays[%d] "
                            "is %s" % (i, a.dtype))
    n = None
    if average:
        from . import _world
        n = _world.comm_info(group)[1]
    for bucket in buckets:
        by_dtype = {}
        for i in bucket:
            by_dtype.setdefault(arrays[i].dtype.str, []).append(i)
        for idx in by_dtype.values():
            if len(idx) == 1 and arrays[idx[0]].flags.c_contiguous:
                a = arrays[idx[0]]
                collective.all_reduce(a, op, out=a, group=group)
                if average:
                    a /= n
                continue
            flat = np.concatenate([arrays[i].reshape(-1) for i in idx])
            collective.all_reduce(flat, op, out=flat, group=group)
            if average:
                flat /= n
            off = 0
            for i in idx:
                a = arrays[i]
                a[...] = flat[off:off + a.size].reshape(a.shape)
                off += a.size
    return buckets
