# SPDX-License-Identifier: Apache-2.0
"""Collectives on numpy arrays, over any group (default: the world group).

Every call is collective over the group's ranks (point-to-point: the two
ranks), blocks until this rank's part is done, and runs on the calling
thread (libhccl's NULL-stream mode; the GIL is released meanwhile). Arrays
are handed to the library as they are, without copies: they must be
C-contiguous, in native byte order, and outputs writable. Results go into
``out`` when given (``out=x`` works in place where the operation allows),
else into a new array.

dtypes: float16, float32, float64, int8, int16, int32, int64, uint8,
uint16, uint32, uint64, bfloat16 (when numpy knows one, e.g. from
ml_dtypes), bool (moved as bytes), complex64/complex128 (as pairs of
floats). Reductions (sum, prod, max, min) take int8, int16, int32, int64,
uint64, float16, float32, float64, bfloat16, and complex for sum; prod is
refused for int16 and bfloat16, as HCCL does.
"""
import ctypes
import enum

import numpy as np

from . import _lib, _world
from .manage.api import WORLD, check_group

__all__ = ["ReduceOp", "all_reduce", "reduce", "broadcast", "all_gather",
           "reduce_scatter", "all_to_all", "all_to_all_v", "send", "recv",
           "barrier"]


class ReduceOp(enum.IntEnum):
    """HcclReduceOp values."""
    SUM = 0
    PROD = 1
    MAX = 2
    MIN = 3


# numpy dtype name -> (HcclDataType, elements per numpy element)
_INT8, _INT16, _INT32, _FP16, _FP32, _INT64 = 0, 1, 2, 3, 4, 5
_UINT64, _UINT8, _UINT16, _UINT32, _FP64, _BF16 = 6, 7, 8, 9, 10, 11
_DTYPES = {
    "int8": (_INT8, 1), "int16": (_INT16, 1), "int32": (_INT32, 1),
    "int64": (_INT64, 1), "uint8": (_UINT8, 1), "uint16": (_UINT16, 1),
    "uint32": (_UINT32, 1), "uint64": (_UINT64, 1),
    "float16": (_FP16, 1), "float32": (_FP32, 1), "float64": (_FP64, 1),
    "bfloat16": (_BF16, 1), "bool": (_UINT8, 1),
    "complex64": (_FP32, 2), "complex128": (_FP64, 2),
}
_REDUCIBLE = {"int8", "int16", "int32", "int64", "uint64", "float16",
              "float32", "float64", "bfloat16", "complex64", "complex128"}
_NO_PROD = {"int16", "bfloat16"}
_SUM_ONLY = {"complex64", "complex128"}
_OPS = {"sum": ReduceOp.SUM, "prod": ReduceOp.PROD, "product": ReduceOp.PROD,
        "max": ReduceOp.MAX, "min": ReduceOp.MIN}


def _op(op):
    if isinstance(op, ReduceOp):
        return op
    if isinstance(op, str) and op.lower() in _OPS:
        return _OPS[op.lower()]
    if isinstance(op, int) and not isinstance(op, bool) and \
            op in ReduceOp.__members__.values():
        return ReduceOp(op)
    raise ValueError("op %r is not a reduction: use 'sum', 'prod', 'max', "
                     "'min' or hccl.ReduceOp" % (op,))


def _dtype_of(a, what):
    name = a.dtype.name
    if name not in _DTYPES or a.dtype.hasobject:
        raise TypeError("%s has dtype %s, which HCCL cannot carry (supported: "
                        "%s)" % (what, a.dtype, ", ".join(sorted(_DTYPES))))
    if not a.dtype.isnative:
        raise ValueError("%s has dtype %s in non-native byte order; use "
                         "x.astype(x.dtype.newbyteorder('='))"
                         % (what, a.dtype.str))
    return _DTYPES[name]


def _buf(a, what, writable=False):
    """(address, element count for the library, HcclDataType) of a."""
    if not isinstance(a, np.ndarray):
        raise TypeError("%s must be a numpy.ndarray, not %s"
                        % (what, type(a).__name__))
    dt, mult = _dtype_of(a, what)
    if not a.flags.c_contiguous:
        raise ValueError("%s is not C-contiguous (shape %s, strides %s); "
                         "pass numpy.ascontiguousarray(...) or a copy"
                         % (what, a.shape, a.strides))
    if writable and not a.flags.writeable:
        raise ValueError("%s is read-only; the result needs a writable "
                         "array" % what)
    return a.ctypes.data, a.size * mult, dt


def _check_reduce(a, op, what):
    name = a.dtype.name
    if name not in _REDUCIBLE:
        raise TypeError("%s: HCCL does not reduce %s (reductions take %s)"
                        % (what, a.dtype, ", ".join(sorted(_REDUCIBLE))))
    if op == ReduceOp.PROD and name in _NO_PROD:
        raise TypeError("%s: HCCL does not multiply %s (prod is refused for "
                        "int16 and bfloat16)" % (what, a.dtype))
    if name in _SUM_ONLY and op != ReduceOp.SUM:
        raise TypeError("%s: %s arrays can only be summed" % (what, a.dtype))


def _out(out, like_shape, dtype, size, what="out"):
    """A writable output of size elements: out checked, or a new array."""
    if out is None:
        return np.empty(like_shape, dtype=dtype)
    if not isinstance(out, np.ndarray):
        raise TypeError("%s must be a numpy.ndarray, not %s"
                        % (what, type(out).__name__))
    if out.dtype != dtype:
        raise TypeError("%s has dtype %s, the input %s" % (what, out.dtype,
                                                           np.dtype(dtype)))
    if out.size != size:
        raise ValueError("%s has %d elements, the result %d (shape %s)"
                         % (what, out.size, size, tuple(like_shape)))
    return out


def _group(group):
    """(comm handle, group size, this rank) of group."""
    check_group(group)
    _world.ensure()
    return _world.comm_info(group)


def _check_root(root, n, what="root"):
    if isinstance(root, bool) or not isinstance(root, (int, np.integer)):
        raise TypeError("%s must be an int, not %s"
                        % (what, type(root).__name__))
    if root < 0 or root >= n:
        raise ValueError("%s = %d is not a rank of the group (size %d)"
                         % (what, root, n))
    return int(root)


def all_reduce(x, op="sum", out=None, group=WORLD):
    """Element-wise reduction of x over the group, on every rank.
    out=x reduces in place. Returns the result."""
    op = _op(op)
    comm, _, _ = _group(group)
    sp, count, dt = _buf(x, "x")
    _check_reduce(x, op, "all_reduce")
    out = _out(out, x.shape, x.dtype, x.size)
    rp = _buf(out, "out", writable=True)[0]
    if count == 0:
        return out  # nothing to do (the library would say so)
    _lib.check("HcclAllReduce", _lib.hccl().HcclAllReduce(
        sp, rp, count, dt, int(op), comm, None), "group '%s'" % group)
    return out


def reduce(x, root=0, op="sum", out=None, group=WORLD):
    """Reduction of x over the group into root's out. Returns the result
    on root, None elsewhere (out, if given there, is scratch)."""
    op = _op(op)
    comm, n, me = _group(group)
    root = _check_root(root, n)
    sp, count, dt = _buf(x, "x")
    _check_reduce(x, op, "reduce")
    out = _out(out, x.shape, x.dtype, x.size)
    rp = _buf(out, "out", writable=True)[0]
    if count == 0:
        return out if me == root else None
    _lib.check("HcclReduce", _lib.hccl().HcclReduce(
        sp, rp, count, dt, int(op), root, comm, None), "group '%s'" % group)
    return out if me == root else None


def broadcast(x, root=0, group=WORLD):
    """root's x into every rank's x (in place). Returns x."""
    comm, n, me = _group(group)
    root = _check_root(root, n)
    p, count, dt = _buf(x, "x", writable=me != root)
    if count == 0:
        return x
    _lib.check("HcclBroadcast", _lib.hccl().HcclBroadcast(
        p, count, dt, root, comm, None), "group '%s'" % group)
    return x


def all_gather(x, out=None, group=WORLD):
    """Every rank's x, stacked: out[i] is group rank i's x (out has shape
    (n,) + x.shape unless given with another shape of that size)."""
    comm, n, _ = _group(group)
    sp, count, dt = _buf(x, "x")
    out = _out(out, (n,) + x.shape, x.dtype, n * x.size)
    rp = _buf(out, "out", writable=True)[0]
    if np.shares_memory(x, out):
        raise ValueError("all_gather: x and out overlap")
    if count == 0:
        return out
    _lib.check("HcclAllGather", _lib.hccl().HcclAllGather(
        sp, rp, count, dt, comm, None), "group '%s'" % group)
    return out


def _blocks(x, n, what):
    if x.size % n:
        raise ValueError("%s: x has %d elements, not a multiple of the "
                         "group size %d" % (what, x.size, n))
    return x.size // n


def reduce_scatter(x, op="sum", out=None, group=WORLD):
    """x holds n equal blocks; rank i gets block i reduced over the
    group. The result has shape x.shape[1:] when x has two or more
    dimensions and x.shape[0] == n, else (x.size // n,)."""
    op = _op(op)
    comm, n, _ = _group(group)
    sp, _, dt = _buf(x, "x")
    _check_reduce(x, op, "reduce_scatter")
    k = _blocks(x, n, "reduce_scatter")
    shape = x.shape[1:] if x.ndim >= 2 and x.shape[0] == n else (k,)
    out = _out(out, shape, x.dtype, k)
    rp = _buf(out, "out", writable=True)[0]
    mult = _DTYPES[x.dtype.name][1]
    if k == 0:
        return out
    _lib.check("HcclReduceScatter", _lib.hccl().HcclReduceScatter(
        sp, rp, k * mult, dt, int(op), comm, None), "group '%s'" % group)
    return out


def all_to_all(x, out=None, group=WORLD):
    """x holds n equal blocks; block j goes to rank j, and out's block i
    comes from rank i (out has x's shape unless given)."""
    comm, n, _ = _group(group)
    sp, _, dt = _buf(x, "x")
    k = _blocks(x, n, "all_to_all")
    out = _out(out, x.shape, x.dtype, x.size)
    rp = _buf(out, "out", writable=True)[0]
    if np.shares_memory(x, out):
        raise ValueError("all_to_all: x and out overlap (HCCL refuses in "
                         "place)")
    mult = _DTYPES[x.dtype.name][1]
    if k == 0:
        return out
    _lib.check("HcclAlltoAll", _lib.hccl().HcclAlltoAll(
        sp, k * mult, dt, rp, k * mult, dt, comm, None),
        "group '%s'" % group)
    return out


def _counts(v, n, what):
    try:
        a = [int(c) for c in v]
    except TypeError:
        raise TypeError("%s must be a sequence of %d ints" % (what, n))
    if len(a) != n:
        raise ValueError("%s has %d entries, the group %d ranks"
                         % (what, len(a), n))
    for i, c in enumerate(a):
        if c < 0:
            raise ValueError("%s[%d] = %d is negative" % (what, i, c))
    return a


def _displs(d, counts, n, what):
    if d is None:
        out, acc = [], 0
        for c in counts:
            out.append(acc)
            acc += c
        return out
    return _counts(d, n, what)


def all_to_all_v(x, send_counts, recv_counts=None, out=None,
                 send_displs=None, recv_displs=None, group=WORLD):
    """Rank j gets send_counts[j] elements of x from send_displs[j]; out
    gets recv_counts[i] elements from rank i at recv_displs[i]. Counts and
    displacements are in elements of x's dtype; displacements default to
    packed blocks. Without recv_counts the ranks first exchange their
    counts. Returns out (1-D unless given)."""
    comm, n, _ = _group(group)
    sp, _, dt = _buf(x, "x")
    scounts = _counts(send_counts, n, "send_counts")
    sdispls = _displs(send_displs, scounts, n, "send_displs")
    flat = x.size
    for j in range(n):
        if sdispls[j] + scounts[j] > flat:
            raise ValueError("all_to_all_v: block %d (displacement %d, "
                             "count %d) goes past x's %d elements"
                             % (j, sdispls[j], scounts[j], flat))
    if recv_counts is None:
        got = all_to_all(np.array(scounts, dtype=np.int64), group=group)
        rcounts = [int(c) for c in got]
    else:
        rcounts = _counts(recv_counts, n, "recv_counts")
    rdispls = _displs(recv_displs, rcounts, n, "recv_displs")
    need = max([d + c for d, c in zip(rdispls, rcounts)] + [0])
    if out is None:
        out = np.empty(need, dtype=x.dtype)
    else:
        _out(out, (need,), x.dtype, out.size)
        if out.size < need:
            raise ValueError("all_to_all_v: out has %d elements, the "
                             "received blocks need %d" % (out.size, need))
    rp = _buf(out, "out", writable=True)[0]
    if out.size and x.size and np.shares_memory(x, out):
        raise ValueError("all_to_all_v: x and out overlap (HCCL refuses in "
                         "place)")
    mult = _DTYPES[x.dtype.name][1]
    u64n = ctypes.c_uint64 * n
    _lib.check("HcclAlltoAllV", _lib.hccl().HcclAlltoAllV(
        sp, u64n(*[c * mult for c in scounts]),
        u64n(*[d * mult for d in sdispls]), dt,
        rp, u64n(*[c * mult for c in rcounts]),
        u64n(*[d * mult for d in rdispls]), dt, comm, None),
        "group '%s'" % group)
    return out


def send(x, dst, group=WORLD):
    """Send x to group rank dst (which calls recv with the same size and
    dtype). Blocks until dst took it."""
    comm, n, me = _group(group)
    dst = _check_root(dst, n, "dst")
    if dst == me:
        raise ValueError("send: dst %d is this rank itself" % dst)
    p, count, dt = _buf(x, "x")
    if count == 0:
        return
    _lib.check("HcclSend", _lib.hccl().HcclSend(p, count, dt, dst, comm,
                                                None),
               "group '%s', to rank %d" % (group, dst))


def recv(out, src, group=WORLD):
    """Receive into out (in place) from group rank src. Returns out."""
    comm, n, me = _group(group)
    src = _check_root(src, n, "src")
    if src == me:
        raise ValueError("recv: src %d is this rank itself" % src)
    p, count, dt = _buf(out, "out", writable=True)
    if count == 0:
        return out
    _lib.check("HcclRecv", _lib.hccl().HcclRecv(p, count, dt, src, comm,
                                                None),
               "group '%s', from rank %d" % (group, src))
    return out


def barrier(group=WORLD):
    """Returns once every rank of the group called it."""
    comm, _, _ = _group(group)
    _lib.check("HcclBarrier", _lib.hccl().HcclBarrier(comm, None),
               "group '%s'" % group)
