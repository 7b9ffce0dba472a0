# SPDX-License-Identifier: Apache-2.0
"""torch.distributed AllReduce and DDP step time, backend "hccl" beside
"gloo", in one run (not a test).

    python3 bench/torch_allreduce.py [--ranks 2 4] [--min 8] [--max 64M]
                                     [--ddp-steps 30] [--out FILE.md]

Each rank count starts its ranks with ``python3 -m hccl.run``; every rank
builds both process groups (the default one "hccl", and a "gloo" group
over the same ranks) and times them in turns on the same buffers:

* all_reduce (fp32, SUM) from --min to --max bytes (x2 steps): per size,
  the median over 5 rounds of the mean time of an iteration loop, with
  a barrier before each round; busbw = 2(n-1)/n * bytes / time;
* a DistributedDataParallel step (forward, backward with its bucketed
  AllReduce, SGD step) of an MLP 1024-4096-4096-1024 (about 25 MB of
  fp32 gradients), the median over --ddp-steps steps after warm-up.

Prints a markdown table (and writes it to --out). Wants the library
(OPENHCCL_LIB or a build tree at build/) and hccl.torch's extension
(built on first use).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.join(os.path.dirname(HERE), "python")


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip().upper().rstrip("B")
    if s and s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(s)


def human(n):
    for unit, m in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= m and n % m == 0:
            return "%d %s" % (n // m, unit)
    return "%d B" % n


def iters_for(nbytes):
    if nbytes <= 64 << 10:
        return 200
    if nbytes <= 1 << 20:
        return 50
    if nbytes <= 8 << 20:
        return 10
    return 4


def rank_main(args):
    import torch
    import torch.distributed as dist
    import hccl.torch  # noqa: F401
    dist.init_process_group("hccl")
    rank, n = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    groups = {"hccl": dist.group.WORLD, "gloo": gloo}
    res = {"allreduce": {}, "ddp": {}}
    size = args.min
    while size <= args.max:
        count = max(1, size // 4)
        t = torch.ones(count, dtype=torch.float32)
        it = iters_for(size)
        for name, g in groups.items():
            for _ in range(3):
                dist.all_reduce(t, group=g)
            rounds = []
            for _ in range(5):
                dist.barrier(group=g)
                t0 = time.perf_counter()
                for _ in range(it):
                    dist.all_reduce(t, group=g)
                rounds.append((time.perf_counter() - t0) / it)
            res["allreduce"].setdefault(str(size), {})[name] = \
                statistics.median(rounds)
        size *= 2
    torch.manual_seed(0)
    for name, g in groups.items():
        model = torch.nn.Sequential(
            torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
            torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
            torch.nn.Linear(4096, 1024))
        ddp = torch.nn.parallel.DistributedDataParallel(model,
                                                        process_group=g)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
        x = torch.randn(32, 1024)
        y = torch.randn(32, 1024)
        times = []
        for step in range(args.ddp_steps + 3):
            dist.barrier(group=g)
            t0 = time.perf_counter()
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(ddp(x), y)
            loss.backward()
            opt.step()
            if step >= 3:
                times.append(time.perf_counter() - t0)
        res["ddp"][name] = statistics.median(times)
    if rank == 0:
        with open(args.result, "w") as f:
            json.dump(res, f)
    dist.barrier()
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    p.add_argument("--min", default="8")
    p.add_argument("--max", default="64M")
    p.add_argument("--ddp-steps", type=int, default=30)
    p.add_argument("--out", help="also write the table here")
    p.add_argument("--rank-main", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    a = p.parse_args()
    a.min, a.max = parse_size(a.min), parse_size(a.max)
    if a.rank_main:
        a.min, a.max = int(a.min), int(a.max)
        return rank_main(a)
    env = dict(os.environ)
    env["PYTHONPATH"] = PYDIR + os.pathsep + env.get("PYTHONPATH", "")
    lines = ["torch.distributed all_reduce (fp32 SUM) and DDP step, "
             "\"hccl\" beside \"gloo\"; %s, %d CPUs, load %.1f"
             % (time.strftime("%Y-%m-%d %H:%M"), os.cpu_count(),
                os.getloadavg()[0]), ""]
    for n in a.ranks:
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "res.json")
            cmd = [sys.executable, "-m", "hccl.run", "-n", str(n),
                   os.path.abspath(__file__), "--rank-main",
                   "--min", str(a.min), "--max", str(a.max),
                   "--ddp-steps", str(a.ddp_steps), "--result", out]
            r = subprocess.run(cmd, env=env)
            if r.returncode != 0:
                print("ranks=%d failed (exit %d)" % (n, r.returncode))
                return 1
            with open(out) as f:
                res = json.load(f)
        factor = 2.0 * (n - 1) / n
        lines += ["### %d ranks" % n, "",
                  "| size | hccl us | gloo us | hccl busbw GB/s | "
                  "gloo busbw GB/s | hccl/gloo |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for size in sorted(res["allreduce"], key=int):
            h = res["allreduce"][size]["hccl"]
            g = res["allreduce"][size]["gloo"]
            b = int(size)
            lines.append("| %s | %.1f | %.1f | %.3f | %.3f | %.2fx |" % (
                human(b), h * 1e6, g * 1e6, factor * b / h / 1e9,
                factor * b / g / 1e9, g / h))
        dh, dg = res["ddp"]["hccl"], res["ddp"]["gloo"]
        lines += ["", "DDP step (MLP 1024-4096-4096-1024, batch 32): "
                  "hccl %.1f ms, gloo %.1f ms (%.2fx)"
                  % (dh * 1e3, dg * 1e3, dg / dh), ""]
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
