# SPDX-License-Identifier: Apache-2.0
"""Rank side of the launcher tests: python3 -m hccl.run -n N
run_worker.py MODE [ARGS]."""
import json
import os
import signal
import sys
import time

R = int(os.environ.get("RANK_ID", "-1"))


def loop_allreduce():
    import numpy as np
    import hccl
    x = np.ones(4096, dtype=np.float32)
    while True:
        hccl.all_reduce(x, out=x)
        x[:] = 1


def main():
    mode = sys.argv[1]
    args = sys.argv[2:]
    if mode == "env":
        keys = ["RANK_TABLE_FILE", "RANK_ID", "RANK_SIZE", "DEVICE_ID",
                "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                "MASTER_ADDR", "MASTER_PORT", "GROUP_RANK"]
        rec = {k: os.environ.get(k) for k in keys}
        rec["argv"] = args
        with open(os.path.join(args[0], "env.%d" % R), "w") as f:
            json.dump(rec, f)
        with open(rec["RANK_TABLE_FILE"]) as f:
            json.load(f)
        return 0
    if mode == "exit":  # rank args[0] exits with args[1]; others compute
        if len(args) > 2 and R == int(args[0]):
            # A slow teardown: registered before hccl's own exit handlers,
            # so it runs after them, once this rank's communicators are
            # gone and its peers have failed (they end before it does).
            import atexit
            atexit.register(time.sleep, float(args[2]))
        import hccl
        hccl.barrier()
        if R == int(args[0]):
            time.sleep(0.2)
            return int(args[1])
        loop_allreduce()
    if mode == "raise":  # rank args[0] raises during the collectives
        import numpy as np
        import hccl
        x = np.ones(4096, dtype=np.float32)
        for i in range(1000000):
            if R == int(args[0]) and i == 50:
                raise RuntimeError("rank %d gives up" % R)
            hccl.all_reduce(x, out=x)
            x[:] = 1
    if mode == "pids":  # write the pid, then compute until killed
        import hccl
        hccl.barrier()
        tmp = os.path.join(args[0], ".pid.%d" % R)
        with open(tmp, "w") as f:
            f.write(str(os.getpid()))
        os.rename(tmp, os.path.join(args[0], "pid.%d" % R))  # whole
        loop_allreduce()
    if mode == "stubborn":  # ignore SIGTERM; rank args[0] exits 3
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if R == int(args[0]):
            time.sleep(0.3)
            return 3
        while True:
            time.sleep(1)
    if mode == "signals":  # record SIGUSR1, then exit 0
        got = []
        signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
        with open(os.path.join(args[0], "ready.%d" % R), "w"):
            pass
        deadline = time.monotonic() + 30
        while not got and time.monotonic() < deadline:
            time.sleep(0.01)
        with open(os.path.join(args[0], "usr1.%d" % R), "w") as f:
            f.write(str(len(got)))
        return 0 if got else 9
    if mode == "wait":  # ready file, then sleep (SIGINT ends it)
        with open(os.path.join(args[0], "ready.%d" % R), "w"):
            pass
        time.sleep(60)
        return 0
    raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    sys.exit(main())
