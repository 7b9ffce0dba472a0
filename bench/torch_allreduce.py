# SPDX-License-Identifier: Apache-2.0
"""torch.distributed AllReduce and DDP step time, backend "hccl" beside
"gloo", in one run (not a test).

    /usr/bin/python3 bench/torch_allreduce.py [--ranks 2 4] [--min 8]
        [--max 64M] [--rounds 7] [--ddp-steps 20] [--out FILE.md]

Each rank count starts its ranks with ``python3 -m hccl.run``; every rank
builds both process groups (the default one "hccl", and a "gloo" group
over the same ranks) and times them in turns on the same buffers:

* all_reduce (fp32, SUM) from --min to --max bytes (x2 steps): per size,
  the median over --rounds rounds (the backends taking turns, a barrier
  before each) of the mean time of a loop of about 30 ms;
  busbw = 2(n-1)/n * bytes / time;
* a DistributedDataParallel step (forward, backward with its bucketed
  AllReduce, SGD step) of an MLP 512-2048-2048-512 (6.3 M parameters,
  25 MB of fp32 gradients), the backends taking turns, median over
  --ddp-steps steps after warm-up.

Every rank runs torch with one intra-op thread (the ranks share the
machine's cores).

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


def rank_main(args):
    import torch
    import torch.distributed as dist
    import hccl.torch  # noqa: F401
    torch.set_num_threads(1)  # n ranks share the machine's cores
    dist.init_process_group("hccl")
    rank = dist.get_rank()
    gloo = dist.new_group(backend="gloo")
    groups = [("hccl", dist.group.WORLD), ("gloo", gloo)]
    res = {"allreduce": {}, "ddp": {}}

    def agree(x):  # the ranks use the largest of their numbers
        t = torch.tensor([x], dtype=torch.int64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=gloo)
        return int(t.item())

    size = args.min
    while size <= args.max:
        t = torch.ones(max(1, size // 4), dtype=torch.float32)
        iters = {}
        for name, g in groups:  # warm up, then aim at ~30 ms a round
            for _ in range(3):
                dist.all_reduce(t, group=g)
            t0 = time.perf_counter()
            dist.all_reduce(t, group=g)
            one = time.perf_counter() - t0
            iters[name] = agree(min(2000, max(3, int(0.03 / max(one,
                                                                1e-7)))))
        rounds = {name: [] for name, _ in groups}
        for _ in range(args.rounds):  # the backends take turns
            for name, g in groups:
                dist.barrier(group=g)
                t0 = time.perf_counter()
                for _ in range(iters[name]):
                    dist.all_reduce(t, group=g)
                rounds[name].append((time.perf_counter() - t0) /
                                    iters[name])
        res["allreduce"][str(size)] = {k: statistics.median(v)
                                       for k, v in rounds.items()}
        size *= 2
    models = {}
    for name, g in groups:
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(512, 2048), torch.nn.ReLU(),
            torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
            torch.nn.Linear(2048, 512))
        ddp = torch.nn.parallel.DistributedDataParallel(model,
                                                        process_group=g)
        models[name] = (ddp, torch.optim.SGD(ddp.parameters(), lr=0.01), g)
    x = torch.randn(32, 512)
    y = torch.randn(32, 512)
    times = {name: [] for name in models}
    for step in range(args.ddp_steps + 3):
        for name, (ddp, opt, g) in models.items():  # in turns
            dist.barrier(group=g)
            t0 = time.perf_counter()
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(ddp(x), y)
            loss.backward()
            opt.step()
            if step >= 3:
                times[name].append(time.perf_counter() - t0)
    res["ddp"] = {k: statistics.median(v) for k, v in times.items()}
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
    p.add_argument("--ddp-steps", type=int, default=20)
    p.add_argument("--rounds", type=int, default=7)
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
                   "--ddp-steps", str(a.ddp_steps), "--rounds",
                   str(a.rounds), "--result", out]
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
        lines += ["", "DDP step (MLP 512-2048-2048-512, 6.3 M parameters, "
                  "batch 32, median of %d): " % a.ddp_steps +
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
