# SPDX-License-Identifier: Apache-2.0
"""Rank side of the numpy / management tests: python3 -m hccl.run -n N
np_worker.py SCENARIO [ARGS]. Each scenario asserts and ends with
``PASS <scenario> rank <r>``."""
import os
import sys

import numpy as np

import hccl
from hccl.manage import api as m
from hccl.split import api as sp

R = int(os.environ.get("RANK_ID", "0"))
N = int(os.environ.get("RANK_SIZE", "1"))
WORLD = "hccl_world_group"


def raises(exc, fn, *args, match=None, code=None, **kw):
    try:
        fn(*args, **kw)
    except exc as e:
        if match is not None and match not in str(e):
            raise AssertionError("%s(%s): message %r lacks %r"
                                 % (fn.__name__, args, str(e), match))
        if code is not None:
            assert isinstance(e, hccl.HcclError), repr(e)
            assert e.code == code, (e.code, code, str(e))
        return e
    raise AssertionError("%s%r did not raise %s" % (fn.__name__, args,
                                                    exc.__name__))


# ---------------------------------------------------------------- manage


def scenario_world():
    assert m.get_rank_size() == N and m.get_rank_size(WORLD) == N
    assert m.get_rank_id() == R and m.get_rank_id(group=WORLD) == R
    assert m.get_local_rank_size() == N  # all ranks on this host
    assert m.get_local_rank_id() == R
    for g in range(N):
        assert m.get_world_rank_from_group_rank(WORLD, g) == g
        assert m.get_group_rank_from_world_rank(g, WORLD) == g
    e = raises(hccl.HcclError, m.get_world_rank_from_group_rank, WORLD, N,
               code=1)
    assert e.name == "HCCL_E_PARA" and e.text == "parameter error", e
    assert isinstance(e, ValueError)
    assert "HcomGetWorldRankFromGroupRank" in str(e)
    raises(hccl.HcclError, m.get_group_rank_from_world_rank, N, WORLD,
           code=1)
    assert hccl.initialized()


def scenario_errors():
    long_name = "g" * 128
    for fn in (m.get_rank_size, m.get_local_rank_size, m.get_rank_id,
               m.get_local_rank_id, m.destroy_group):
        raises(ValueError, fn, 3, match="group must be a str")
        raises(ValueError, fn, "", match="must not be empty")
        raises(ValueError, fn, long_name, match="more than 127")
        raises(ValueError, fn, "a\0b", match="NUL")
    # 127 characters is a valid (unknown) name: the library says so
    raises(hccl.HcclError, m.get_rank_size, "g" * 127, code=1)
    for fn in (m.get_rank_size, m.get_local_rank_size, m.get_rank_id,
               m.get_local_rank_id):
        raises(hccl.HcclError, fn, "nope", code=1, match="HCCL_E_PARA")
    raises(hccl.HcclError, m.destroy_group, "nope", code=1)
    raises(ValueError, m.destroy_group, WORLD, match="cannot be destroyed")
    # create_group arguments
    raises(ValueError, m.create_group, WORLD, 1, [R], match="world group")
    raises(ValueError, m.create_group, None, 1, [R], match="must be a str")
    raises(ValueError, m.create_group, "g", 0, [], match="not in [1, 32768]")
    raises(ValueError, m.create_group, "g", -1, [R], match="not in [1,")
    raises(ValueError, m.create_group, "g", 32769, [R], match="not in [1,")
    raises(ValueError, m.create_group, "g", True, [R], match="must be an int")
    raises(ValueError, m.create_group, "g", 1.0, [R], match="must be an int")
    raises(ValueError, m.create_group, "g", 1, R, match="must be a list")
    raises(ValueError, m.create_group, "g", 1, {R}, match="must be a list")
    raises(ValueError, m.create_group, "g", 2, [R], match="has 1 entries")
    raises(ValueError, m.create_group, "g", 1, ["0"], match="must be an int")
    raises(ValueError, m.create_group, "g", 1, [-1], match="not in [0,")
    raises(ValueError, m.create_group, "g", 1, [False], match="an int")
    raises(ValueError, m.create_group, "g", 2, [R, R], match="listed twice")
    raises(ValueError, m.create_group, "g", 1, [N], match="not a world rank")
    if N > 1:
        other = (R + 1) % N
        raises(ValueError, m.create_group, "g", 1, [other],
               match="only the members call")
    raises(hccl.HcclError, m.get_rank_size, "g", code=1)  # nothing made
    # rank maps
    raises(ValueError, m.get_world_rank_from_group_rank, WORLD, -1,
           match="not in [0,")
    raises(ValueError, m.get_world_rank_from_group_rank, WORLD, "0",
           match="must be an int")
    raises(ValueError, m.get_group_rank_from_world_rank, 1.5, WORLD,
           match="must be an int")
    raises(ValueError, m.get_group_rank_from_world_rank, 0, 7,
           match="must be a str")
    raises(hccl.HcclError, m.get_world_rank_from_group_rank, "nope", 0,
           code=1)
    raises(hccl.HcclError, m.get_group_rank_from_world_rank, 0, "nope",
           code=1)
    # split strategies
    for bad, msg in (([], "empty"), ([1] * 9, "more than 8"),
                     ((3, 2), "strictly ascending"), ([1, 1], "strictly"),
                     ([1.0], "must be an int"), ([True], "must be an int"),
                     ([-1], "not in [0,"), ([2 ** 32], "not in [0,"),
                     ("12", "must be a list"), (5, "must be a list")):
        raises(ValueError, sp.set_split_strategy_by_idx, bad, match=msg)
    for bad, msg in (([], "empty"), ([10.0] * 9 + [10.0], "more than 8"),
                     ([50, 49], "sums to"), ([50, 50.5], "sums to"),
                     ([101, -1], "non-negative"),
                     ([float("nan"), 100], "non-negative"),
                     (["50", 50], "int or float"), ([True, 99], "int or"),
                     ((100,), None), (100, "must be a list")):
        if msg is None:
            continue
        raises(ValueError, sp.set_split_strategy_by_size, bad, match=msg)
    raises(ValueError, sp.set_split_strategy_by_idx, [1], group="",
           match="empty")
    raises(hccl.HcclError, sp.set_split_strategy_by_idx, [1], group="nope",
           code=1)
    raises(hccl.HcclError, sp.set_split_strategy_by_size, [100],
           group="nope", code=1)
    # accepted forms
    sp.set_split_strategy_by_idx([0, 5, 2 ** 32 - 1])
    assert sp.get_split_strategy() == ("idx", [0, 5, 2 ** 32 - 1])
    sp.set_split_strategy_by_idx((7,))
    sp.set_split_strategy_by_size([33.3, 33.3, 33.4])
    assert sp.get_split_strategy() == ("size", [33.3, 33.3, 33.4])
    sp.set_split_strategy_by_size([100])
    sp.set_split_strategy_by_size([0, 96.54, 3.46])
    # HcclError carries the code and the library's text
    e = raises(hccl.HcclError, m.get_rank_size, "nope")
    assert (e.code, e.name, e.text, e.func) == (
        1, "HCCL_E_PARA", "parameter error", "HcomGetRankSize"), vars(e)


def _check_group(name, members):
    me = members.index(R)
    n = len(members)
    assert m.get_rank_size(name) == n
    assert m.get_rank_id(name) == me
    assert m.get_local_rank_size(name) == n
    assert m.get_local_rank_id(name) == me
    for g, w in enumerate(members):
        assert m.get_world_rank_from_group_rank(name, g) == w
        assert m.get_group_rank_from_world_rank(w, name) == g
    for w in range(N):
        if w not in members:
            raises(hccl.HcclError, m.get_group_rank_from_world_rank, w, name,
                   code=1)
    raises(hccl.HcclError, m.get_world_rank_from_group_rank, name, n, code=1)
    # collectives on the group follow the list order
    got = hccl.all_gather(np.array([R], dtype=np.int32), group=name)
    assert got.reshape(-1).tolist() == members, (got, members)
    for root in range(n):
        x = np.array([R * 10 + 1, R], dtype=np.int64)
        hccl.broadcast(x, root=root, group=name)
        assert x.tolist() == [members[root] * 10 + 1, members[root]], x
    s = hccl.all_reduce(np.array([R + 1.0]), group=name)
    assert s[0] == sum(w + 1 for w in members)
    r = hccl.reduce(np.array([R + 1], dtype=np.int32), root=n - 1,
                    group=name)
    if me == n - 1:
        assert r[0] == sum(w + 1 for w in members)
    else:
        assert r is None
    hccl.barrier(group=name)


def scenario_groups():
    """Unsorted and overlapping groups at 2 or 4 ranks."""
    if N == 2:
        plans = [("rev", [1, 0]), ("fwd", [0, 1])]
    else:
        assert N == 4, N
        plans = [("g01", [0, 1]), ("g123", [1, 2, 3]), ("g302", [3, 0, 2]),
                 ("g3210", [3, 2, 1, 0]), ("g21", [2, 1])]
    mine = [(g, ms) for g, ms in plans if R in ms]
    for g, ms in mine:
        m.create_group(g, len(ms), list(ms))
    for g, ms in plans:
        if R not in ms:
            raises(hccl.HcclError, m.get_rank_size, g, code=1)
            raises(hccl.HcclError, hccl.all_reduce, np.ones(2), group=g,
                   match="only its members")
    for g, ms in mine:
        _check_group(g, ms)
        raises(hccl.HcclError, m.create_group, g, len(ms), list(ms),
               code=1)  # exists
        sp.set_split_strategy_by_idx([0, 1], group=g)
        assert sp.get_split_strategy(g) == ("idx", [0, 1])
    # the world group is untouched
    scenario_world()
    for g, ms in mine:
        m.destroy_group(g)
        raises(hccl.HcclError, m.get_rank_size, g, code=1)
        raises(hccl.HcclError, m.destroy_group, g, code=1)
        assert sp.get_split_strategy(g) == ("size", [96.54, 3.46])
    # names are free again; the list may come reordered this time
    for g, ms in mine:
        ms2 = list(reversed(ms))
        m.create_group(g, len(ms2), ms2)
        _check_group(g, ms2)
    # left for hccl.finalize() at exit to destroy


def scenario_reinit():
    """finalize() tears the world down; the next call builds it again."""
    assert m.get_rank_size() == N
    if N > 1:
        m.create_group("pair", 2, [1, 0])
    hccl.finalize()
    assert not hccl.initialized()
    hccl.finalize()  # twice is fine
    assert m.get_rank_size() == N  # rebuilt from the same rank table
    assert hccl.initialized()
    raises(hccl.HcclError, m.get_rank_size, "pair", code=1)
    x = hccl.all_reduce(np.full(3, R + 1, dtype=np.int32))
    assert x.tolist() == [N * (N + 1) // 2] * 3


def scenario_explicit_init():
    """hccl.init() with an explicit table and rank (no RANK_* lookups)."""
    table = os.environ.pop("RANK_TABLE_FILE")
    rank = int(os.environ.pop("RANK_ID"))
    hccl.init(rank_table=table, rank=rank)
    assert m.get_rank_size() == N and m.get_rank_id() == rank
    hccl.init()  # already built: nothing happens
    assert m.get_rank_size() == N


def scenario_threads():
    """Calls from other threads find the world group and its groups."""
    import threading
    if N > 1:
        m.create_group("tg", N, list(range(N - 1, -1, -1)))
    out = {}

    def body():
        out["size"] = m.get_rank_size()
        out["id"] = m.get_rank_id("tg") if N > 1 else R
        out["sum"] = hccl.all_reduce(np.array([1.0]))[0]

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert out == {"size": N, "id": N - 1 - R, "sum": float(N)}, out


# ----------------------------------------------------------- collectives

REDUCE_DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32",
                 "int64", "uint64"]
MOVE_DTYPES = REDUCE_DTYPES + ["uint8", "uint16", "uint32", "bool",
                               "complex64", "complex128"]
try:
    import ml_dtypes  # noqa: F401  (numpy has no bfloat16 of its own)
    REDUCE_DTYPES.append("bfloat16")
    MOVE_DTYPES.append("bfloat16")
except ImportError:
    pass
SIZES = [0, 1, 7, 1031, 70000]
OPS = {"sum": np.add, "prod": np.multiply, "max": np.maximum,
       "min": np.minimum}


def data(rank, n, dtype, salt=0, small=False):
    """Rank rank's input: small integers, so that every reduction of them
    is exact in every dtype."""
    i = np.arange(n, dtype=np.int64)
    if small:  # for prod: 1 or 2
        v = 1 + (i + rank + salt) % 2
    else:
        v = (i * 7 + rank * 13 + salt) % 23
        if dtype in ("int8", "int16", "int32", "int64", "float16",
                     "float32", "float64", "bfloat16"):
            v = v - 11
    if dtype == "bool":
        return (v % 2).astype(bool)
    if dtype.startswith("complex"):
        return (v + 1j * (v % 5)).astype(dtype)
    return v.astype(dtype)


def reference(op, dtype, n, salt=0):
    small = op == "prod"
    acc = data(0, n, dtype, salt, small)
    for r in range(1, N):
        acc = OPS[op](acc, data(r, n, dtype, salt, small))
    return acc


def _reducible(op, dtype):
    if dtype.startswith("complex"):
        return op == "sum"
    return not (op == "prod" and dtype in ("int16", "bfloat16"))


def scenario_all_reduce():
    for dtype in REDUCE_DTYPES + ["complex64", "complex128"]:
        for op in OPS:
            if not _reducible(op, dtype):
                continue
            for n in SIZES:
                x = data(R, n, dtype, 1, op == "prod")
                want = reference(op, dtype, n, 1)
                got = hccl.all_reduce(x, op)
                assert got.dtype == x.dtype and got.shape == x.shape
                assert np.array_equal(got, want), (dtype, op, n)
                assert np.array_equal(x, data(R, n, dtype, 1, op == "prod"))
                # in place: the same buffer, no copy
                y = x.copy()
                addr = y.ctypes.data
                out = hccl.all_reduce(y, op, out=y)
                assert out is y and y.ctypes.data == addr
                assert np.array_equal(y, want)
    # shapes are kept; enum and upper-case names work
    x = data(R, 24, "float32").reshape(2, 3, 4)
    got = hccl.all_reduce(x, hccl.ReduceOp.MAX)
    assert got.shape == (2, 3, 4)
    assert np.array_equal(got, reference("max", "float32", 24).reshape(
        2, 3, 4))
    assert np.array_equal(hccl.all_reduce(x, "SUM"),
                          reference("sum", "float32", 24).reshape(2, 3, 4))
    # a preallocated out of another shape but the same size
    out = np.empty((24,), dtype=np.float32)
    assert hccl.all_reduce(x, out=out) is out


def scenario_reduce():
    for dtype in REDUCE_DTYPES:
        for op in OPS:
            if not _reducible(op, dtype):
                continue
            for n in (0, 5, 1031, 70000):
                for root in range(N):
                    x = data(R, n, dtype, 2, op == "prod")
                    got = hccl.reduce(x, root, op)
                    if R == root:
                        assert np.array_equal(
                            got, reference(op, dtype, n, 2)), (dtype, op, n)
                    else:
                        assert got is None
                    assert np.array_equal(x, data(R, n, dtype, 2,
                                                  op == "prod"))


def scenario_broadcast():
    for dtype in MOVE_DTYPES:
        for n in SIZES:
            for root in range(N):
                x = data(R, n, dtype, 3)
                got = hccl.broadcast(x, root)
                assert got is x
                assert np.array_equal(x, data(root, n, dtype, 3)), (dtype, n)
    # the root's array may be read-only
    x = data(R, 10, "int32", 4)
    if R == 0:
        x.flags.writeable = False
        hccl.broadcast(x, 0)
    else:
        hccl.broadcast(x, 0)
        assert np.array_equal(x, data(0, 10, "int32", 4))


def scenario_all_gather():
    for dtype in MOVE_DTYPES:
        for n in SIZES:
            x = data(R, n, dtype, 5)
            got = hccl.all_gather(x)
            assert got.shape == (N, n)
            for r in range(N):
                assert np.array_equal(got[r], data(r, n, dtype, 5)), (dtype,
                                                                      n, r)
    x = data(R, 6, "float64").reshape(2, 3)
    got = hccl.all_gather(x)
    assert got.shape == (N, 2, 3)
    out = np.empty(6 * N)
    assert hccl.all_gather(x, out=out) is out
    assert np.array_equal(out.reshape(N, 2, 3), got)


def scenario_reduce_scatter():
    for dtype in REDUCE_DTYPES:
        for op in OPS:
            if not _reducible(op, dtype):
                continue
            for k in (0, 1, 7, 20000):
                x = data(R, N * k, dtype, 6, op == "prod")
                want = reference(op, dtype, N * k, 6)[R * k:(R + 1) * k]
                got = hccl.reduce_scatter(x, op)
                assert got.shape == (k,)
                assert np.array_equal(got, want), (dtype, op, k)
    # first dimension == group size: the rest of the shape is kept
    x = data(R, N * 6, "int32", 7).reshape(N, 2, 3)
    got = hccl.reduce_scatter(x)
    assert got.shape == (2, 3)
    assert np.array_equal(got.reshape(-1), reference(
        "sum", "int32", N * 6, 7)[R * 6:(R + 1) * 6])


def scenario_all_to_all():
    for dtype in MOVE_DTYPES:
        for k in (0, 1, 7, 20000):
            x = data(R, N * k, dtype, 8)
            got = hccl.all_to_all(x)
            for src in range(N):
                want = data(src, N * k, dtype, 8)[R * k:(R + 1) * k]
                assert np.array_equal(got[src * k:(src + 1) * k], want), (
                    dtype, k, src)


def _v_counts(src, dst):
    return (src * 3 + dst * 5) % 7


def scenario_all_to_all_v():
    for dtype in ("float32", "int64", "complex64", "uint8"):
        sc = [_v_counts(R, j) for j in range(N)]
        x = data(R, sum(sc), dtype, 9)
        soff = np.concatenate([[0], np.cumsum(sc)])
        for with_counts in (True, False):
            rc = [_v_counts(i, R) for i in range(N)]
            got = hccl.all_to_all_v(x, sc, rc if with_counts else None)
            assert got.shape == (sum(rc),)
            off = 0
            for i in range(N):
                src_counts = [_v_counts(i, j) for j in range(N)]
                start = sum(src_counts[:R])
                want = data(i, sum(src_counts), dtype, 9)[
                    start:start + rc[i]]
                assert np.array_equal(got[off:off + rc[i]], want), (dtype, i)
                off += rc[i]
        # explicit displacements: blocks spaced out with gaps
        sd = [int(soff[j]) for j in range(N)]
        rd = [i * 10 for i in range(N)]
        out = np.zeros(10 * N, dtype=dtype)
        hccl.all_to_all_v(x, sc, rc, out=out, send_displs=sd,
                          recv_displs=rd)
        for i in range(N):
            src_counts = [_v_counts(i, j) for j in range(N)]
            start = sum(src_counts[:R])
            want = data(i, sum(src_counts), dtype, 9)[start:start + rc[i]]
            assert np.array_equal(out[rd[i]:rd[i] + rc[i]], want)


def scenario_send_recv():
    if N == 1:
        raises(ValueError, hccl.send, np.ones(2), 0, match="itself")
        raises(ValueError, hccl.recv, np.ones(2), 0, match="itself")
        return
    for dtype in MOVE_DTYPES:
        for n in (0, 1, 1031, 70000):
            # a ring, even ranks sending first so it cannot deadlock
            nxt, prv = (R + 1) % N, (R - 1) % N
            out = np.empty(n, dtype=dtype)
            if R % 2 == 0:
                hccl.send(data(R, n, dtype, 10), nxt)
                hccl.recv(out, prv)
            else:
                hccl.recv(out, prv)
                hccl.send(data(R, n, dtype, 10), nxt)
            assert np.array_equal(out, data(prv, n, dtype, 10)), (dtype, n)
    raises(ValueError, hccl.send, np.ones(2), R, match="itself")
    raises(ValueError, hccl.recv, np.ones(2), N, match="not a rank")


def scenario_barrier():
    import time
    # rank 0 arrives late: nobody leaves the barrier before it came
    if R == 0:
        time.sleep(0.3)
    t0 = time.monotonic()
    stamp = np.array([t0], dtype=np.float64)
    hccl.barrier()
    t1 = time.monotonic()
    first = hccl.all_reduce(stamp, "max")  # when the last one arrived
    assert t1 >= first[0] - 1e-6, (t1, first[0])
    hccl.barrier()


def scenario_bad_arrays():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    raises(ValueError, hccl.all_reduce, x[:, ::2], match="not C-contiguous")
    raises(ValueError, hccl.all_reduce, x.T, match="not C-contiguous")
    ro = np.ones(4, dtype=np.float32)
    ro.flags.writeable = False
    raises(ValueError, hccl.all_reduce, ro, out=ro, match="read-only")
    assert np.array_equal(hccl.all_reduce(ro), np.full(4, float(N)))
    if N > 1:
        raises(ValueError, hccl.recv, ro, (R + 1) % N, match="read-only")
        raises(ValueError, hccl.broadcast, ro, (R + 1) % N, match="read-only")
    raises(TypeError, hccl.all_reduce, np.array(["a", "b"]),
           match="cannot carry")
    raises(TypeError, hccl.all_reduce, np.array([object()]),
           match="cannot carry")
    raises(TypeError, hccl.all_reduce, np.ones(2, dtype=np.float128)
           if hasattr(np, "float128") else np.array(["x"]),
           match="cannot carry")
    raises(TypeError, hccl.all_reduce, [1, 2], match="numpy.ndarray")
    raises(ValueError, hccl.all_reduce, np.ones(2, dtype=">f4"),
           match="byte order")
    for dt in ("uint8", "uint16", "uint32", "bool"):
        raises(TypeError, hccl.all_reduce, np.ones(2, dtype=dt),
               match="does not reduce")
    raises(TypeError, hccl.all_reduce, np.ones(2, dtype=np.int16), "prod",
           match="does not multiply")
    raises(TypeError, hccl.all_reduce, np.ones(2, dtype=np.complex64), "max",
           match="only be summed")
    raises(ValueError, hccl.all_reduce, np.ones(2), "avg", match="not a red")
    raises(TypeError, hccl.all_reduce, np.ones(2), out=np.ones(2, np.float32),
           match="dtype")
    raises(ValueError, hccl.all_reduce, np.ones(2), out=np.ones(3),
           match="has 3 elements")
    raises(ValueError, hccl.broadcast, np.ones(2), N, match="not a rank")
    raises(ValueError, hccl.broadcast, np.ones(2), -1, match="not a rank")
    raises(TypeError, hccl.broadcast, np.ones(2), 0.0, match="must be an int")
    if N > 1:
        raises(ValueError, hccl.reduce_scatter, np.ones(N * 3 + 1),
               match="not a multiple")
        raises(ValueError, hccl.all_to_all, np.ones(N * 2 + 1),
               match="not a multiple")
    y = np.ones(N * 2)
    raises(ValueError, hccl.all_to_all, y, out=y, match="overlap")
    raises(ValueError, hccl.all_gather, y, out=np.ones(N * N * 2 + 1),
           match="elements")
    raises(ValueError, hccl.all_to_all_v, np.ones(4), [5] * N, [1] * N,
           match="goes past")
    raises(ValueError, hccl.all_to_all_v, np.ones(4), [1] * (N + 1),
           match="entries")
    raises(ValueError, hccl.all_to_all_v, np.ones(4), [-1] * N,
           match="negative")
    raises(ValueError, hccl.all_reduce, np.ones(2), group="",
           match="must not be empty")
    raises(hccl.HcclError, hccl.all_reduce, np.ones(2), group="nope",
           match="only its members")
    # nothing above reached the peers: the world group still works
    assert hccl.all_reduce(np.ones(1))[0] == N


def scenario_buckets():
    """all_reduce_buckets against numpy, one AllReduce per segment and
    dtype, for the default strategy, by size and by index."""
    from hccl import collective, fusion
    calls = []
    real = collective.all_reduce

    def counting(x, op="sum", out=None, group=WORLD):
        calls.append((x.dtype.name, x.size, group))
        return real(x, op, out=out, group=group)

    collective.all_reduce = counting
    try:
        shapes = [(10,), (3, 4), (100,), (5,), (2, 2, 2), (300,), (7,),
                  (1,)]
        dtypes = ["float32"] * 6 + ["float64", "float32"]

        def grads(salt):
            out = []
            for i, (s, d) in enumerate(zip(shapes, dtypes)):
                n = int(np.prod(s))
                out.append(data(R, n, d, salt + i).reshape(s))
            # one non-contiguous view (fused through a copy)
            big = np.zeros((2, 10), dtype=np.float32)
            big[0] = data(R, 10, "float32", salt + 50)
            out[0] = big[0, :]
            return out

        def want(salt):
            res = []
            for i, (s, d) in enumerate(zip(shapes, dtypes)):
                n = int(np.prod(s))
                res.append(reference("sum", d, n, salt + i).reshape(s))
            res[0] = reference("sum", "float32", 10, salt + 50)
            return res

        sizes = [g.nbytes for g in grads(0)]
        total = sum(sizes)
        # default: 96.54 % / 3.46 % by size
        g = grads(0)
        plan = hccl.all_reduce_buckets(g)
        assert plan == hccl.plan_buckets(g)
        acc, cut = 0, None
        for i, s in enumerate(sizes):
            acc += s
            if acc >= total * 0.9654 and cut is None:
                cut = i
        assert plan == [list(range(cut + 1)),
                        list(range(cut + 1, len(sizes)))], (plan, cut)
        for a, b in zip(g, want(0)):
            assert np.array_equal(a, b)
        # one AllReduce per (segment, dtype)
        expect = 0
        for seg in plan:
            expect += len(set(dtypes[i] for i in seg))
        assert len(calls) == expect, (calls, plan)
        # by index: segments end at gradients 1, 4 and 5; 6.. follow
        sp.set_split_strategy_by_idx([1, 4, 5])
        calls.clear()
        g = grads(100)
        plan = hccl.all_reduce_buckets(g)
        assert plan == [[0, 1], [2, 3, 4], [5], [6, 7]], plan
        assert [c[1] for c in calls] == [10 + 12, 100 + 5 + 8, 300, 7, 1], \
            calls
        for a, b in zip(g, want(100)):
            assert np.array_equal(a, b)
        # by size wins over by index: 50 / 50 percent
        sp.set_split_strategy_by_size([50, 50])
        g = grads(200)
        plan = hccl.all_reduce_buckets(g)
        acc, cut = 0, None
        for i, s in enumerate(sizes):
            acc += s
            if acc >= total * 0.5 and cut is None:
                cut = i
        assert plan == [list(range(cut + 1)),
                        list(range(cut + 1, len(sizes)))], plan
        for a, b in zip(g, want(200)):
            assert np.array_equal(a, b)
        # average=True divides by the group size
        g = [np.full(4, float(R), dtype=np.float32)]
        hccl.all_reduce_buckets(g, average=True)
        assert np.allclose(g[0], (N - 1) / 2.0)
        raises(TypeError, hccl.all_reduce_buckets, [np.ones(2, np.int32)],
               average=True, match="floating")
        ro = np.ones(2)
        ro.flags.writeable = False
        raises(ValueError, hccl.all_reduce_buckets, [ro], match="read-only")
        raises(TypeError, hccl.all_reduce_buckets, np.ones(2),
               match="must be a list")
        raises(TypeError, hccl.all_reduce_buckets, [[1.0]],
               match="not a numpy")
        # a group's own strategy
        if N > 1:
            m.create_group("bk", N, list(range(N)))
            sp.set_split_strategy_by_idx([0], group="bk")
            g = [np.ones(3), np.ones(3)]
            assert hccl.all_reduce_buckets(g, group="bk") == [[0], [1]]
            assert all(np.array_equal(a, np.full(3, float(N))) for a in g)
    finally:
        collective.all_reduce = real
    assert fusion.collective is collective


SCENARIOS = {k[len("scenario_"):]: v for k, v in globals().items()
             if k.startswith("scenario_")}


def main():
    """Scenarios named in argv[1] (comma separated), in order; the first
    failure ends the run (FAIL <name> rank <r>, then the traceback)."""
    for name in sys.argv[1].split(","):
        try:
            SCENARIOS[name]()
        except BaseException:
            sys.stdout.flush()
            os.write(1, ("FAIL %s rank %d\n" % (name, R)).encode())
            raise
        sys.stdout.flush()
        os.write(1, ("PASS %s rank %d\n" % (name, R)).encode())


if __name__ == "__main__":
    main()
