# SPDX-License-Identifier: Apache-2.0
"""python3 -m hccl.run: the ranks' environment, exit codes, a rank that
fails, raises or is killed (the others stopped within a second, the
culprit named), signal forwarding, several nodes (by hand, under mpirun,
with Slurm's variables), nothing left running."""
import json
import os
import re
import signal
import socket
import subprocess
import time

import pytest

from conftest import PY, PYDIR, WORKERS, env, launch

W = os.path.join(WORKERS, "run_worker.py")


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is as good as gone
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _start(n, *args, launcher_args=(), extra_env=None):
    cmd = [PY, "-m", "hccl.run", "-n", str(n)] + list(launcher_args) + \
        [W] + [str(a) for a in args]
    return subprocess.Popen(cmd, env=env(extra_env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_files(d, prefix, n, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sum(1 for f in os.listdir(d) if f.startswith(prefix)) >= n:
            return
        time.sleep(0.02)
    raise AssertionError("ranks never wrote %s* in %s" % (prefix, d))


def test_environment(tmp_path):
    r = launch(3, "run_worker.py", "env", str(tmp_path), "x y", "--flag")
    assert r.returncode == 0, r.stderr
    tables = set()
    for rank in range(3):
        e = json.loads((tmp_path / ("env.%d" % rank)).read_text())
        assert e["RANK_ID"] == e["RANK"] == str(rank)
        assert e["DEVICE_ID"] == e["LOCAL_RANK"] == str(rank)
        assert e["RANK_SIZE"] == e["WORLD_SIZE"] == "3"
        assert e["LOCAL_WORLD_SIZE"] == "3" and e["GROUP_RANK"] == "0"
        assert e["MASTER_ADDR"] == "127.0.0.1" and int(e["MASTER_PORT"]) > 0
        assert e["argv"] == [str(tmp_path), "x y", "--flag"]
        tables.add(e["RANK_TABLE_FILE"])
    assert len(tables) == 1
    # the launcher's scratch directory (the rank table) is gone
    assert not os.path.exists(tables.pop())


def test_all_ranks_succeed():
    r = launch(4, "np_worker.py", "world")
    assert r.returncode == 0 and r.stdout.count("PASS world") == 4, r.stderr


@pytest.mark.parametrize("code", [1, 7, 42])
def test_failing_rank_exit_code(code):
    t0 = time.monotonic()
    r = launch(4, "run_worker.py", "exit", 2, code, timeout=60)
    took = time.monotonic() - t0
    assert r.returncode == code, r.stderr
    assert "rank 2 exited with code %d" % code in r.stderr, r.stderr
    assert re.search(r"exit code %d: rank 2 " % code, r.stderr), r.stderr
    assert took < 30


def test_raising_rank_is_named():
    """Its peers fail too (its communicator goes away first), but the
    launcher names the rank that raised."""
    r = launch(4, "run_worker.py", "raise", 1, timeout=60)
    assert r.returncode == 1, r.stderr
    assert "rank 1 gives up" in r.stderr
    assert "exit code 1: rank 1 exited with code 1" in r.stderr, r.stderr


def test_killed_rank_stops_the_others(tmp_path):
    p = _start(4, "pids", str(tmp_path))
    _wait_files(str(tmp_path), "pid.", 4)
    pids = {r: int((tmp_path / ("pid.%d" % r)).read_text())
            for r in range(4)}
    time.sleep(0.2)
    t0 = time.monotonic()
    os.kill(pids[3], signal.SIGKILL)
    others = [pids[r] for r in range(3)]
    while any(_alive(pid) for pid in others) and \
            time.monotonic() - t0 < 10:
        time.sleep(0.005)
    took = time.monotonic() - t0
    out, err = p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGKILL, err
    assert "rank 3 was killed by SIGKILL" in err, err
    assert "exit code 137: rank 3 was killed by SIGKILL" in err, err
    assert took < 1.0, "the other ranks were gone after %.2f s" % took
    assert not any(_alive(pid) for pid in pids.values())


def test_ranks_ignoring_sigterm_are_killed():
    t0 = time.monotonic()
    r = launch(3, "run_worker.py", "stubborn", 0, timeout=30)
    took = time.monotonic() - t0
    assert r.returncode == 3, r.stderr
    assert "rank 0 exited with code 3; stopping ranks 1, 2" in r.stderr
    assert took < 3.0, took  # startup + 0.3 s + --grace 0.5 s


def test_grace_option():
    t0 = time.monotonic()
    r = launch(2, "run_worker.py", "stubborn", 0, timeout=30,
               launcher_args=["--grace", "2"])
    took = time.monotonic() - t0
    assert r.returncode == 3 and took >= 2.3, (r.returncode, took)


def test_signals_are_forwarded(tmp_path):
    p = _start(3, "signals", str(tmp_path))
    _wait_files(str(tmp_path), "ready.", 3)
    p.send_signal(signal.SIGUSR1)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    for r in range(3):
        assert (tmp_path / ("usr1.%d" % r)).read_text() == "1"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_ends_the_job(tmp_path, sig):
    p = _start(2, "wait", str(tmp_path))
    _wait_files(str(tmp_path), "ready.", 2)
    t0 = time.monotonic()
    p.send_signal(sig)
    out, err = p.communicate(timeout=30)
    assert time.monotonic() - t0 < 5
    assert p.returncode == 128 + sig, (p.returncode, err)
    assert "the launcher got %s" % signal.Signals(sig).name in err, err


def test_module_and_program_modes(tmp_path):
    r = subprocess.run(
        [PY, "-m", "hccl.run", "-n", "2", "-m", "module_main",
         str(tmp_path)], env=env({"PYTHONPATH": WORKERS + os.pathsep +
                                  PYDIR}),
        capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "mod.1").read_text() == "__main__"
    r = subprocess.run(
        [PY, "-m", "hccl.run", "-n", "3", "--no-python", "/bin/sh", "-c",
         'test "$RANK_ID" = 1 && exit 5; exit 0'], env=env(),
        capture_output=True, text=True, timeout=60)
    assert r.returncode == 5 and "rank 1 exited with code 5" in r.stderr
    r = subprocess.run([PY, "-m", "hccl.run", "-n", "2", "--no-python",
                        "/nonexistent/prog"], env=env(), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 127 and "cannot start rank 0" in r.stderr, \
        r.stderr


@pytest.mark.parametrize("args,msg", [
    (["-n", "0", "x.py"], "at least 1"),
    (["x.py"], "required"),
    (["-n", "2", "--grace", "-1", "x.py"], "must not be negative"),
    (["-n", "2", "-m", "--no-python", "x"], "exclude each other"),
])
def test_bad_arguments(args, msg):
    r = subprocess.run([PY, "-m", "hccl.run"] + args, env=env(),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and msg in r.stderr, r.stderr


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def _nodes(nnodes, nproc, worker_args, per_node_env=None, timeout=120):
    port = _free_port()
    procs = []
    for k in range(nnodes):
        extra = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        if per_node_env:
            extra.update(per_node_env(k))
        largs = [] if per_node_env else ["--nnodes", str(nnodes),
                                         "--node-rank", str(k)]
        cmd = [PY, "-m", "hccl.run", "-n", str(nproc)] + largs + \
            [str(a) for a in worker_args]
        procs.append(subprocess.Popen(cmd, env=env(extra),
                                      stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    return [(p,) + p.communicate(timeout=timeout) for p in procs]


def test_two_nodes():
    res = _nodes(2, 2, [os.path.join(WORKERS, "np_worker.py"), "groups"])
    for p, out, err in res:
        assert p.returncode == 0, err
    text = "".join(o for _, o, _ in res)
    assert sorted(re.findall(r"PASS groups rank (\d)", text)) == \
        ["0", "1", "2", "3"], text


@pytest.mark.parametrize("teardown", [0, 1.0])
def test_two_nodes_failure_stops_both(teardown):
    """teardown 1.0: rank 3 takes a second to end after its peers failed
    (the other node's launcher reports rank 1 long before); node 0 still
    names rank 3, the rank that began to exit first."""
    res = _nodes(2, 2, [W, "exit", 3, 6, teardown])
    for p, out, err in res:
        assert p.returncode == 6, err
        assert "rank 3 exited with code 6" in err, err


def test_slurm_variables():
    """srun -N 2 --ntasks-per-node=1: SLURM_NTASKS / SLURM_PROCID."""
    res = _nodes(2, 2, [os.path.join(WORKERS, "np_worker.py"), "world"],
                 per_node_env=lambda k: {"SLURM_NTASKS": "2",
                                         "SLURM_PROCID": str(k)})
    for p, out, err in res:
        assert p.returncode == 0, err


def test_under_mpirun():
    port = _free_port()
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
           "-x", "MASTER_ADDR=127.0.0.1", "-x", "MASTER_PORT=%d" % port,
           "-x", "PYTHONPATH", "-x", "OPENHCCL_LIB", "-x", "OPENHCCL_LIB_DIR",
           PY, "-m", "hccl.run", "-n", "2",
           os.path.join(WORKERS, "np_worker.py"), "world"]
    e = env()
    e.setdefault("OPENHCCL_LIB", "")
    e.setdefault("OPENHCCL_LIB_DIR", "")
    r = subprocess.run(cmd, env=e, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(re.findall(r"PASS world rank (\d)", r.stdout)) == \
        ["0", "1", "2", "3"], r.stdout


def test_given_rank_table(tmp_path):
    port = _free_port()
    devs = [{"device_id": str(d), "rank_id": str(d)} for d in range(2)]
    devs[0]["host_port"] = str(port)
    t = tmp_path / "t.json"
    t.write_text(json.dumps({"status": "completed", "version": "1.0",
                             "server_count": "1", "server_list": [
                                 {"server_id": "a", "host_ip": "127.0.0.1",
                                  "device": devs}]}))
    r = launch(2, "np_worker.py", "world",
               launcher_args=["--rank-table", str(t)])
    assert r.returncode == 0 and r.stdout.count("PASS world") == 2, r.stderr
    r = launch(3, "np_worker.py", "world",
               launcher_args=["--rank-table", str(t)])
    assert r.returncode != 0 and "gives node 0 2 ranks" in r.stderr


SLURM_CONF = """ClusterName=ohcpy
SlurmctldHost={h}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={p1}
SlurmdPort={p2}
AuthType=auth/none
CredType=cred/none
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
NodeName={h} NodeAddr=127.0.0.1 CPUs=64 State=UNKNOWN
PartitionName=debug Nodes={h} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
"""


@pytest.fixture
def slurm(tmp_path):
    """A one-node Slurm of our own (free ports, a scratch folder; the
    shared notes/slurm.md recipe), stopped afterwards."""
    d = tmp_path / "slurm"
    for sub in ("state", "spool"):
        (d / sub).mkdir(parents=True)
    h = socket.gethostname().split(".")[0]
    conf = d / "slurm.conf"
    conf.write_text(SLURM_CONF.format(h=h, d=d, p1=_free_port(),
                                      p2=_free_port()))
    e = env({"SLURM_CONF": str(conf)})
    daemons = [subprocess.Popen([prog, "-D", "-f", str(conf)] + extra,
                                env=e, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
               for prog, extra in (("slurmctld", ["-i"]), ("slurmd", []))]
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            r = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], env=e,
                               capture_output=True, text=True)
            if r.stdout.strip() == "idle":
                break
            time.sleep(0.2)
        else:
            raise AssertionError("the Slurm node never became idle")
        yield e
    finally:
        subprocess.run(["scancel", "--user=root"], env=e,
                       capture_output=True)
        for p in daemons:
            p.terminate()
        for p in daemons:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def test_under_srun(slurm):
    """srun -n 2 (two "nodes" on this host) python3 -m hccl.run -n 2:
    four ranks; node 0 is the job's first node (scontrol); a failing rank
    makes srun exit with its code."""
    base = ["timeout", "120", "srun", "-n", "2", "--mpi=none", PY, "-m",
            "hccl.run", "-n", "2"]
    r = subprocess.run(base + [os.path.join(WORKERS, "np_worker.py"),
                               "world"], env=slurm, capture_output=True,
                       text=True, timeout=150)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(re.findall(r"PASS world rank (\d)", r.stdout)) == \
        ["0", "1", "2", "3"], r.stdout
    r = subprocess.run(base + [W, "exit", "3", "6", "1.0"], env=slurm,
                       capture_output=True, text=True, timeout=150)
    assert r.returncode == 6, r.stdout + r.stderr
    assert "rank 3 exited with code 6" in r.stderr, r.stderr
