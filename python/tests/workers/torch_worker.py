# SPDX-License-Identifier: Apache-2.0
"""Rank side of the torch tests: python3 -m hccl.run -n N torch_worker.py
SCENARIO (or started by torchrun / by hand with env://). The default
process group is "hccl"; a "gloo" group over the same ranks runs the same
calls for comparison."""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

import hccl.torch  # noqa: F401  registers "hccl"

RANK = None
N = None
GLOO = None



def say(line):
    """One line to stdout in one write: the ranks share the pipe, and a
    print() can go out as the text and its newline apart, so another
    rank's line lands in between (CI saw "...bitwise TruePASS ddp rank 0",
    which the test's ^PASS match missed)."""
    sys.stdout.flush()
    os.write(1, (line + "\n").encode())

def init(timeout=None):
    global RANK, N, GLOO
    kw = {} if timeout is None else {"timeout": timeout}
    dist.init_process_group("hccl", **kw)
    RANK, N = dist.get_rank(), dist.get_world_size()
    assert dist.get_backend() == "hccl"
    GLOO = dist.new_group(backend="gloo")


def raises(fn, match, exc=RuntimeError):
    try:
        fn()
    except exc as e:
        assert match in str(e), "%r lacks %r" % (str(e), match)
        return e
    raise AssertionError("%s did not raise (%s)" % (fn, match))


def inputs(shape, dtype, salt=0, rank=None, small=False):
    """Deterministic per-rank input; integer valued, so sums are exact."""
    r = RANK if rank is None else rank
    n = int(torch.tensor(shape).prod()) if len(shape) else 1
    i = torch.arange(n, dtype=torch.int64)
    if small:
        v = 1 + (i + r + salt) % 2
    else:
        v = (i * 7 + r * 13 + salt) % 23 - 11
    if dtype == torch.bool:
        return (v % 2).to(torch.bool).reshape(shape)
    if dtype == torch.uint8:
        v = v + 11
    if dtype.is_complex:
        return (v + 1j * (v % 5)).to(dtype).reshape(shape)
    return v.to(dtype).reshape(shape)


# Types Gloo (1.13) does not carry: compared with a local reference.
NO_GLOO = (torch.bool, torch.bfloat16, torch.int16, torch.complex64)


def both(fn, dtype=None, ref=None):
    """fn(group) on hccl and on gloo; returns (hccl result, gloo result),
    or ref() in gloo's place for the types Gloo lacks."""
    if dtype in NO_GLOO:
        return fn(None), ref()
    return fn(None), fn(GLOO)


def same(a, b, what):
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b), what
        for x, y in zip(a, b):
            same(x, y, what)
        return
    assert a.dtype == b.dtype and a.shape == b.shape, (what, a, b)
    assert torch.equal(a, b), (what, a, b)


REDUCE = [torch.float32, torch.float64, torch.float16, torch.int32,
          torch.int64, torch.int8]
MOVE = REDUCE + [torch.uint8, torch.bool, torch.bfloat16, torch.int16,
                 torch.complex64]
OPS = {"sum": dist.ReduceOp.SUM, "product": dist.ReduceOp.PRODUCT,
       "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX}
SHAPES = [(1,), (1031,), (3, 5, 7), (70000,)]


def scenario_all_reduce():
    for dtype in REDUCE:
        for name, op in OPS.items():
            for shape in SHAPES:
                def run(g):
                    t = inputs(shape, dtype, 1, small=name == "product")
                    dist.all_reduce(t, op=op, group=g)
                    return t
                same(*both(run), ("all_reduce", dtype, name, shape))
    # bfloat16 and int16 (gloo has neither): against a local reference
    for dtype in (torch.bfloat16, torch.int16):
        want = sum(inputs((257,), torch.int64, 2, rank=r) for r in range(N))
        t = inputs((257,), dtype, 2)
        dist.all_reduce(t)
        assert torch.equal(t.to(torch.int64), want), dtype
    # complex sum
    def csum(g):
        t = inputs((33,), torch.complex64, 3)
        dist.all_reduce(t, group=g)
        return t
    same(*both(csum), "complex")
    # random floats: both backends agree within fp32 rounding
    torch.manual_seed(RANK)
    x = torch.randn(100000)
    a, b = x.clone(), x.clone()
    dist.all_reduce(a)
    dist.all_reduce(b, group=GLOO)
    assert torch.allclose(a, b, rtol=1e-5, atol=1e-5)
    # non-contiguous in place
    def nc(g):
        base = inputs((8, 6), torch.float32, 4)
        v = base.t()
        dist.all_reduce(v, group=g)
        return base
    same(*both(nc), "non-contiguous")
    # async, wait and futures
    t = inputs((1000,), torch.float32, 5)
    ref = t.clone()
    dist.all_reduce(ref, group=GLOO)
    w = dist.all_reduce(t, async_op=True)
    assert w.wait()
    assert w.is_completed() and w.is_success()
    assert torch.equal(t, ref)
    t = inputs((1000,), torch.float32, 5)
    fut = dist.all_reduce(t, async_op=True).get_future()
    res = fut.wait()
    assert isinstance(res, list) and torch.equal(res[0], ref)
    # many in flight, then one wait; then then() on a future
    ts = [inputs((100,), torch.float32, k) for k in range(20)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    works[-1].wait()
    for k, (t, w) in enumerate(zip(ts, works)):
        assert w.is_completed()
        r = inputs((100,), torch.float32, k)
        dist.all_reduce(r, group=GLOO)
        assert torch.equal(t, r), k
    t = inputs((10,), torch.float32, 6)
    f2 = dist.all_reduce(t, async_op=True).get_future().then(
        lambda f: f.value()[0] * 2)
    r = inputs((10,), torch.float32, 6)
    dist.all_reduce(r, group=GLOO)
    assert torch.equal(f2.wait(), r * 2)


def scenario_rooted():
    for dtype in MOVE:
        for root in range(N):
            for shape in ((1,), (3, 5, 7), (70000,)):
                def bc(g):
                    t = inputs(shape, dtype, 7)
                    dist.broadcast(t, root, group=g)
                    return t
                same(*both(bc, dtype, lambda: inputs(shape, dtype, 7,
                                                      rank=root)),
                     ("broadcast", dtype, root, shape))
    for dtype in REDUCE:
        for name, op in OPS.items():
            for root in range(N):
                def rd(g):
                    t = inputs((1031,), dtype, 8, small=name == "product")
                    dist.reduce(t, root, op=op, group=g)
                    return t
                h, g = both(rd)
                if RANK == root:  # elsewhere the content is unspecified
                    same(h, g, ("reduce", dtype, name, root))
                else:  # (gloo leaves partial sums; we leave the input)
                    same(h, inputs((1031,), dtype, 8,
                                   small=name == "product"), "reduce input")
    # broadcast into a non-contiguous view (Gloo 1.13 writes past such a
    # view: checked against a local reference)
    base = inputs((4, 6), torch.int64, 9)
    dist.broadcast(base[:, 1::2], N - 1)
    want = inputs((4, 6), torch.int64, 9)
    want[:, 1::2] = inputs((4, 6), torch.int64, 9, rank=N - 1)[:, 1::2]
    same(base, want, "broadcast non-contiguous")


def scenario_gather_scatter():
    for dtype in MOVE:
        for shape in ((1,), (3, 5), (20000,)):
            def ag(g):
                outs = [torch.zeros(shape, dtype=dtype) for _ in range(N)]
                dist.all_gather(outs, inputs(shape, dtype, 10), group=g)
                return outs
            same(*both(ag, dtype, lambda: [inputs(shape, dtype, 10, rank=r)
                                           for r in range(N)]),
                 ("all_gather", dtype, shape))

            def agt(g):
                out = torch.zeros((N,) + shape, dtype=dtype)
                if g is None:
                    dist.all_gather_into_tensor(out, inputs(shape, dtype, 11))
                else:  # Gloo 1.13 has no _allgather_base: its list form
                    dist.all_gather(list(out.unbind(0)),
                                    inputs(shape, dtype, 11), group=g)
                return out
            same(*both(agt, dtype, lambda: torch.stack(
                [inputs(shape, dtype, 11, rank=r) for r in range(N)])),
                 ("all_gather_into_tensor", dtype, shape))
    # gather and scatter at every root
    for dtype in (torch.float32, torch.int64, torch.uint8, torch.bfloat16):
        for root in range(N):
            def ga(g):
                outs = [torch.zeros(3, 4, dtype=dtype) for _ in range(N)] \
                    if RANK == root else None
                dist.gather(inputs((3, 4), dtype, 20), outs, dst=root,
                            group=g)
                return outs if RANK == root else torch.zeros(1)
            same(*both(ga, dtype, lambda: [inputs((3, 4), dtype, 20, rank=r)
                                           for r in range(N)]
                       if RANK == root else torch.zeros(1)),
                 ("gather", dtype, root))

            def sc(g):
                ins = [inputs((5,), dtype, 21 + j) for j in range(N)] \
                    if RANK == root else None
                out = torch.zeros(5, dtype=dtype)
                dist.scatter(out, ins, src=root, group=g)
                return out
            same(*both(sc, dtype, lambda: inputs((5,), dtype, 21 + RANK,
                                                 rank=root)),
                 ("scatter", dtype, root))
    # objects (pickled, over broadcast / all_gather / gather / scatter)
    objs = [None] * N
    dist.all_gather_object(objs, {"rank": RANK})
    assert objs == [{"rank": r} for r in range(N)], objs
    lst = [("x", RANK)]
    dist.broadcast_object_list(lst, src=N - 1)
    assert lst == [("x", N - 1)]
    got = [None] * N if RANK == 0 else None
    dist.gather_object(RANK * 3, got, dst=0)
    if RANK == 0:
        assert got == [r * 3 for r in range(N)], got
    mine = [None]
    dist.scatter_object_list(mine, [str(r) for r in range(N)]
                             if RANK == 0 else None, src=0)
    assert mine == [str(RANK)], mine
    # all_reduce_coalesced: one AllReduce over the tensors packed together

    def coal(g):
        ts = [inputs((7,), torch.float32, 22), inputs((2, 3), torch.float32,
                                                      23)]
        dist.all_reduce_coalesced(ts, group=g)
        return ts
    same(*both(coal), "all_reduce_coalesced")
    # outputs that are views of one buffer (no copy) and scattered ones
    flat = torch.zeros(N * 4)
    dist.all_gather(list(flat.chunk(N)), inputs((4,), torch.float32, 12))
    want = torch.cat([inputs((4,), torch.float32, 12, rank=r)
                      for r in range(N)])
    assert torch.equal(flat, want)
    # reduce_scatter (gloo 1.13 has none): against a local reference
    for dtype in REDUCE:
        for name, op in OPS.items():
            k = 513
            ins = [inputs((k,), dtype, 13 + j, small=name == "product")
                   for j in range(N)]
            out = torch.zeros(k, dtype=dtype)
            dist.reduce_scatter(out, ins, op=op)
            parts = [inputs((k,), dtype, 13 + RANK, rank=r,
                            small=name == "product") for r in range(N)]
            want = parts[0].clone()
            for p in parts[1:]:
                if name == "sum":
                    want = want + p
                elif name == "product":
                    want = want * p
                elif name == "min":
                    want = torch.minimum(want, p)
                else:
                    want = torch.maximum(want, p)
            assert torch.equal(out, want.to(dtype)), (dtype, name)
            big = torch.cat(ins)
            out2 = torch.zeros(k, dtype=dtype)
            dist.reduce_scatter_tensor(out2, big, op=op)
            assert torch.equal(out2, out), (dtype, name)


def scenario_all_to_all():
    for dtype in (torch.float32, torch.int64, torch.uint8, torch.float16,
                  torch.complex64):
        def single(g):
            t = inputs((N * 6, 3), dtype, 14)
            out = torch.zeros_like(t)
            dist.all_to_all_single(out, t, group=g)
            return out
        same(*both(single), ("all_to_all_single", dtype))
        # with splits: rank r sends (r + j) % 3 + 1 rows to rank j
        send = [(RANK + j) % 3 + 1 for j in range(N)]
        recv = [(i + RANK) % 3 + 1 for i in range(N)]

        def splits(g):
            t = inputs((sum(send), 2), dtype, 15)
            out = torch.zeros((sum(recv), 2), dtype=dtype)
            dist.all_to_all_single(out, t, recv, send, group=g)
            return out
        same(*both(splits), ("all_to_all_single splits", dtype))
    # all_to_all with tensor lists (gloo 1.13 has none): reference
    ins = [inputs((j + 1, 2), torch.float32, 16 + j) for j in range(N)]
    outs = [torch.zeros((RANK + 1, 2)) for _ in range(N)]
    dist.all_to_all(outs, ins)
    for i in range(N):
        assert torch.equal(outs[i], inputs((RANK + 1, 2), torch.float32,
                                           16 + RANK, rank=i)), i


def scenario_p2p():
    if N == 1:
        raises(lambda: dist.send(torch.ones(2), 0), "cannot send to itself")
        return
    nxt, prv = (RANK + 1) % N, (RANK - 1) % N
    for dtype in (torch.float32, torch.int64, torch.bfloat16, torch.bool):
        for shape in ((1,), (70000,)):
            # blocking, in an order that cannot deadlock
            out = torch.zeros(shape, dtype=dtype)
            if RANK % 2 == 0:
                dist.send(inputs(shape, dtype, 17), nxt)
                dist.recv(out, prv)
            else:
                dist.recv(out, prv)
                dist.send(inputs(shape, dtype, 17), nxt)
            assert torch.equal(out, inputs(shape, dtype, 17, rank=prv))

            # isend/irecv around the ring, then wait: like gloo
            def ring(g):
                o = torch.zeros(shape, dtype=dtype)
                reqs = [dist.isend(inputs(shape, dtype, 18), nxt, group=g),
                        dist.irecv(o, prv, group=g)]
                for r in reqs:
                    r.wait()
                return o
            same(*both(ring, dtype, lambda: inputs(shape, dtype, 18,
                                                    rank=prv)),
                 ("isend/irecv", dtype, shape))

            def batch(g):
                o = torch.zeros(shape, dtype=dtype)
                ops = [dist.P2POp(dist.isend, inputs(shape, dtype, 19), nxt,
                                  group=g),
                       dist.P2POp(dist.irecv, o, prv, group=g)]
                for r in dist.batch_isend_irecv(ops):
                    r.wait()
                return o
            same(*both(batch, dtype, lambda: inputs(shape, dtype, 19,
                                                     rank=prv)),
                 ("batch_isend_irecv", dtype, shape))
    # pairwise exchange, both sides sending first
    peer = RANK ^ 1
    if peer < N:
        o = torch.zeros(5)
        s = dist.isend(torch.full((5,), float(RANK)), peer)
        r = dist.irecv(o, peer)
        r.wait()
        s.wait()
        assert torch.equal(o, torch.full((5,), float(peer)))
    # a non-contiguous receive buffer
    base = torch.zeros(4, 6)
    if RANK == 0:
        dist.send(torch.arange(12.).reshape(4, 3), 1)
    elif RANK == 1:
        dist.recv(base[:, ::2], 0)
        assert torch.equal(base[:, ::2], torch.arange(12.).reshape(4, 3))
        assert torch.equal(base[:, 1::2], torch.zeros(4, 3))
    raises(lambda: dist.send(torch.ones(2), RANK), "cannot send to itself")
    raises(lambda: dist.isend(torch.ones(2), N + 3), "not a rank of the "
           "group", exc=(RuntimeError, ValueError))


def scenario_barrier():
    if RANK == 0:
        time.sleep(0.3)
    t = torch.tensor([time.time()], dtype=torch.float64)
    dist.barrier()
    after = time.time()
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    assert after >= t.item() - 0.01, (after, t.item())
    w = dist.barrier(async_op=True)
    w.wait()


def scenario_subgroups():
    """new_group() with the hccl backend: ranks in reverse order, and a
    group without every rank."""
    ranks = list(range(N - 1, -1, -1))
    g = dist.new_group(ranks, backend="hccl")
    t = torch.tensor([float(RANK)])
    dist.broadcast(t, ranks[0], group=g)  # global rank of the source
    assert t.item() == float(ranks[0])
    t = torch.ones(3)
    dist.all_reduce(t, group=g)
    assert torch.equal(t, torch.full((3,), float(N)))
    if N >= 2:
        pair = dist.new_group([0, N - 1], backend="hccl")
        if RANK in (0, N - 1):
            t = torch.tensor([RANK + 1.0])
            dist.all_reduce(t, group=pair)
            assert t.item() == 1.0 + N
        dist.destroy_process_group(pair)
    dist.destroy_process_group(g)
    # A group whose last reference goes in a future's callback (on the
    # group's own progress thread, when the work completes there).
    g2 = dist.new_group(backend="hccl")
    keep = {"g": g2}
    t = torch.ones(1000)
    fut = dist.all_reduce(t, group=g2, async_op=True).get_future()

    def drop(f, keep=keep):
        keep.pop("g", None)
        return f.value()[0]

    chained = fut.then(drop)
    dist.destroy_process_group(g2)
    del g2
    assert torch.equal(chained.wait(), torch.full((1000,), float(N)))


def scenario_mixed():
    """hccl's numpy world group and the torch backend in one process:
    finalizing the former leaves the latter (and the runtime) alone."""
    import numpy as np
    import hccl
    x = hccl.all_reduce(np.full(3, RANK + 1.0))
    assert x.tolist() == [N * (N + 1) / 2] * 3
    hccl.finalize()
    t = torch.full((3,), RANK + 1.0)
    dist.all_reduce(t)
    assert t.tolist() == [N * (N + 1) / 2] * 3
    x = hccl.all_reduce(np.ones(2))  # the world group again
    assert x.tolist() == [float(N)] * 2


def scenario_errors():
    t = torch.ones(4)
    raises(lambda: dist.all_reduce(t, op=dist.ReduceOp.AVG),
           "reduce op 1 is not supported")
    raises(lambda: dist.all_reduce(t.to(torch.int32), op=dist.ReduceOp.BAND),
           "is not supported")
    raises(lambda: dist.all_reduce(torch.ones(3, dtype=torch.uint8)),
           "does not reduce Byte")
    raises(lambda: dist.all_reduce(torch.ones(3, dtype=torch.bool)),
           "does not reduce Bool")
    raises(lambda: dist.all_reduce(torch.ones(3, dtype=torch.int16),
                                   op=dist.ReduceOp.PRODUCT),
           "does not multiply")
    raises(lambda: dist.all_gather([torch.ones(2)] * (N + 1), torch.ones(2)),
           "output list has %d tensors" % (N + 1))
    raises(lambda: dist.all_gather([torch.ones(3) for _ in range(N)],
                                   torch.ones(2)), "does not match the input")
    raises(lambda: dist.all_gather_into_tensor(torch.ones(N * 2 + 1),
                                               torch.ones(2)),
           "output has")
    raises(lambda: dist.all_to_all_single(torch.ones(N * 2), torch.ones(N * 2),
                                          [1] * (N + 1), [2] * N),
           "split sizes have")
    raises(lambda: dist.all_to_all_single(torch.ones(N * 2),
                                          torch.ones(N * 2), [2] * N,
                                          [3] * N), "splits sum to")
    raises(lambda: dist.reduce_scatter(torch.ones(2),
                                       [torch.ones(2)] * (N + 1)),
           "input list has")
    raises(lambda: dist.all_reduce(torch.ones(2).to_sparse()),
           "dense", exc=(RuntimeError, ValueError))
    if N > 1:
        # the ranks disagree on the count: every rank gets HCCL's error
        t = torch.ones(10 + RANK)
        w = dist.all_reduce(t, async_op=True)
        e = raises(w.wait, "HCCL allreduce")
        assert "failed on the stream" in str(e), str(e)
        assert w.is_completed() and not w.is_success()
        # the communicator stays failed (HCCL's sticky error): later
        # operations fail too, at once, and the group can be destroyed
        e = raises(dist.barrier, "HCCL barrier")
        assert "HCCL_E_PARA" in str(e), str(e)
        dist.destroy_process_group()
        return "destroyed"


def scenario_timeout():
    init(timeout=datetime.timedelta(seconds=3))
    if N < 2:
        return
    t = torch.ones(4)
    # an explicit wait timeout while rank 1 is late
    if RANK == 1:
        time.sleep(2.5)
    w = dist.all_reduce(t, async_op=True)
    if RANK == 0:
        t0 = time.monotonic()
        raises(lambda: w.wait(datetime.timedelta(milliseconds=300)),
               "wait timed out after 300 ms")
        assert time.monotonic() - t0 < 2.0
    w.wait()  # rank 1 came: it completes
    assert torch.equal(t, torch.full((4,), float(N)))
    dist.barrier()
    # rank 1 never comes: the group's timeout (3 s) fails the operation
    if RANK == 0:
        t0 = time.monotonic()
        e = raises(lambda: dist.all_reduce(torch.ones(8)), "HCCL allreduce")
        took = time.monotonic() - t0
        assert 2.0 < took < 20.0, took
        assert "timeout" in str(e).lower(), str(e)
    else:
        time.sleep(8)
    return "no teardown"  # rank 1 skipped an operation: the group is off


def scenario_peer_dies():
    """Rank 1 dies in the middle: rank 0 gets a RuntimeError in bounded
    time (run without the launcher, which would stop rank 0 at once)."""
    t = torch.ones(1000)
    if RANK == 1:
        for i in range(20):
            dist.all_reduce(t)
        os._exit(3)
    t0 = None
    try:
        for i in range(1000000):
            if i == 20:
                t0 = time.monotonic()
            dist.all_reduce(t)
    except RuntimeError as e:
        took = time.monotonic() - (t0 or time.monotonic())
        assert i >= 19 and took < 30, (i, took)
        assert "HCCL allreduce" in str(e), str(e)
        say("peer death seen after %.2f s: %s" % (took, e))
        os._exit(0)  # skip teardown: the peer is gone
    raise AssertionError("rank 0 never saw rank 1 die")


def scenario_ddp():
    """A 3-layer MLP trained 20 steps with DistributedDataParallel over
    "hccl" and over "gloo" from the same start: same parameters."""
    deterministic = os.environ.get("HCCL_DETERMINISTIC", "") == "true"
    if deterministic:
        torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)

    def train(group):
        torch.manual_seed(1234)
        model = torch.nn.Sequential(
            torch.nn.Linear(32, 64), torch.nn.ReLU(),
            torch.nn.Linear(64, 64), torch.nn.ReLU(),
            torch.nn.Linear(64, 8))
        ddp = torch.nn.parallel.DistributedDataParallel(
            model, process_group=group, bucket_cap_mb=0.01)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
        gen = torch.Generator().manual_seed(100 + RANK)
        for step in range(20):
            x = torch.randn(16, 32, generator=gen)
            y = torch.randn(16, 8, generator=gen)
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(ddp(x), y)
            loss.backward()
            opt.step()
        return [p.detach().clone() for p in model.parameters()]

    h = train(None)
    g = train(GLOO)
    worst = max((a - b).abs().max().item() for a, b in zip(h, g))
    for a, b in zip(h, g):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-6), worst
    # the ranks hold identical replicas
    for p in h:
        q = p.clone()
        dist.broadcast(q, 0)
        assert torch.equal(p, q)
    bitwise = all(torch.equal(a, b) for a, b in zip(h, g))
    say("ddp rank %d: max |hccl - gloo| = %g, bitwise %s" % (
        RANK, worst, bitwise))
    if deterministic:
        again = train(None)
        assert all(torch.equal(a, b) for a, b in zip(h, again))
        if N <= 2:  # a sum of two is the same in any order
            assert bitwise, worst


def scenario_env_check():
    """Started by torchrun: its variables, nothing of hccl.run's."""
    assert "RANK_TABLE_FILE" not in os.environ
    t = torch.tensor([float(RANK)])
    dist.all_reduce(t)
    assert t.item() == N * (N - 1) / 2


SCENARIOS = {k[len("scenario_"):]: v for k, v in globals().items()
             if k.startswith("scenario_")}


def main():
    """Scenarios named in argv[1] (comma separated), in order, in one
    process group; the first failure ends the run (FAIL <name> rank <r>,
    then the traceback). A scenario that returns something has left the
    group unusable or destroyed it: it must come last."""
    names = sys.argv[1].split(",")
    if names != ["timeout"]:
        init()
    torn = None
    for name in names:
        try:
            torn = SCENARIOS[name]()
        except BaseException:
            sys.stdout.flush()
            say("FAIL %s rank %d" % (name, RANK))
            raise
        sys.stdout.flush()
        say("PASS %s rank %d" % (name, RANK))
    if torn is None:
        dist.barrier()
        dist.destroy_process_group()
    if names == ["timeout"]:
        os._exit(0)


if __name__ == "__main__":
    main()
