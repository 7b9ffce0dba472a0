# SPDX-License-Identifier: Apache-2.0
"""hccl.manage.api and hccl.split.api: every call, its checks and errors,
groups from unsorted and overlapping rank lists, rank maps both ways, the
world group from a rank table and its teardown."""
import json
import socket
import subprocess

import pytest

from conftest import PY, check_scenario, env, run_ranks, run_scenarios


# One launch per process count runs these in turn (reinit last: it tears
# the world down and builds it again).
PLANS = {1: ["world", "errors", "threads", "reinit"],
         2: ["world", "errors", "groups", "threads", "reinit"],
         4: ["world", "groups", "threads"]}


def _run(n):
    return run_scenarios(n, "np_worker.py", PLANS[n], timeout=600)


@pytest.mark.parametrize("n,scenario", [(n, s) for n in PLANS
                                        for s in PLANS[n]])
def test_scenario(n, scenario):
    """world: every query of the world group and both rank maps;
    errors: every call's argument checks and library errors; groups:
    unsorted and overlapping groups (queries, maps, collectives, destroy,
    re-create); threads: calls from another thread; reinit: finalize and
    rebuild."""
    check_scenario(_run(n), n, scenario)


@pytest.mark.parametrize("n", sorted(PLANS))
def test_clean_exit(n):
    r = _run(n)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]


def test_explicit_init():
    run_ranks(2, "np_worker.py", "explicit_init")


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def _table(path, n, port):
    devs = [{"device_id": str(n - 1 - r), "rank_id": str(r)}
            for r in range(n)]
    devs[0]["host_port"] = str(port)
    with open(path, "w") as f:
        json.dump({"status": "completed", "version": "1.0",
                   "server_count": "1",
                   "server_list": [{"server_id": "s0",
                                    "host_ip": "127.0.0.1",
                                    "device": devs}]}, f)


def test_world_from_rank_table_without_launcher(tmp_path):
    """As HCCL's frameworks start ranks: RANK_TABLE_FILE + RANK_ID only."""
    n = 3
    table = str(tmp_path / "table.json")
    _table(table, n, _free_port())
    code = ("import hccl, numpy as np, os; from hccl.manage import api as m;"
            "from hccl import _world;"
            "assert m.get_rank_size() == %d;"
            "r = m.get_rank_id(); assert r == int(os.environ['RANK_ID']);"
            "assert _world.ensure().device == %d - 1 - r;"
            "x = hccl.all_reduce(np.array([r + 1]));"
            "assert x[0] == %d, x; print('OK', r)" % (n, n, n * (n + 1) // 2))
    procs = [subprocess.Popen([PY, "-c", code], env=env(
        {"RANK_TABLE_FILE": table, "RANK_ID": str(r)}),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for r in range(n)]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    for r, (p, o) in enumerate(zip(procs, outs)):
        assert p.returncode == 0 and "OK %d" % r in o, o


@pytest.mark.parametrize("extra,msg", [
    ({"RANK_TABLE_FILE": "/nonexistent/table.json", "RANK_ID": "0"},
     "does not exist"),
    ({"RANK_TABLE_FILE": "/nonexistent/table.json"}, "RANK_ID is not"),
    ({"RANK_SIZE": "2"}, "no RANK_TABLE_FILE"),
    ({"RANK_ID": "x"}, "not an integer"),
    ({"DEVICE_ID": "-1"}, "negative"),
])
def test_world_environment_errors(extra, msg):
    code = ("from hccl.manage import api as m\n"
            "try:\n    m.get_rank_size()\n"
            "except ValueError as e:\n    print('ERR', e)\n")
    r = subprocess.run([PY, "-c", code], env=env(extra), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "ERR" in r.stdout and msg in r.stdout, \
        r.stdout + r.stderr


def test_malformed_rank_table(tmp_path):
    table = tmp_path / "bad.json"
    table.write_text('{"version": "1.0", "server_list": [}')
    code = ("import hccl\nfrom hccl.manage import api as m\n"
            "try:\n    m.get_rank_size()\n"
            "except hccl.HcclError as e:\n    print('ERR', e.code, e)\n")
    r = subprocess.run([PY, "-c", code], env=env(
        {"RANK_TABLE_FILE": str(table), "RANK_ID": "0"}),
        capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "HcclCommInitClusterInfo failed" in \
        r.stdout, r.stdout + r.stderr
    # the library names the file and the place
    assert "bad.json" in r.stderr, r.stderr


def test_library_not_found():
    r = subprocess.run([PY, "-c", "from hccl.manage import api as m\n"
                        "m.get_rank_size()"],
                       env=env({"OPENHCCL_LIB": "/nonexistent/libhccl.so.1"}),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "load hccl lib error" in r.stderr, r.stderr


def test_import_needs_no_numpy_for_management():
    """hccl.manage works where numpy is absent (imported lazily)."""
    code = ("import sys; sys.modules['numpy'] = None\n"
            "import hccl\nfrom hccl.manage import api as m\n"
            "assert m.get_rank_size() == 1\nprint('OK')")
    r = subprocess.run([PY, "-c", code], env=env(), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr
