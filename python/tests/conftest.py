# SPDX-License-Identifier: Apache-2.0
"""Shared helpers: run a worker scenario on N ranks through the launcher.

Every multi-process test starts ``python3 -m hccl.run -n N
tests/workers/<worker>.py <scenario>``; each rank runs the scenario and
prints ``PASS <scenario> rank <r>`` at the end, and the test asserts the
exit status and one PASS line per rank (so a scenario that silently did
nothing fails). The library comes from OPENHCCL_LIB / OPENHCCL_LIB_DIR, or
the build tree at <repo>/build.
"""
import os
import re
import subprocess
import sys

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(TESTS)
REPO = os.path.dirname(PYDIR)
WORKERS = os.path.join(TESTS, "workers")
PY = sys.executable


def env(extra=None):
    e = dict(os.environ)
    e["PYTHONPATH"] = PYDIR + os.pathsep + e.get("PYTHONPATH", "")
    e.setdefault("HCCL_CONNECT_TIMEOUT", "30")
    e.pop("RANK_TABLE_FILE", None)
    for k in ("RANK_ID", "RANK_SIZE", "DEVICE_ID", "RANK", "WORLD_SIZE",
              "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        e.pop(k, None)
    if extra:
        e.update(extra)
    return e


def launch(n, worker, *args, timeout=120, extra_env=None, launcher_args=()):
    cmd = [PY, "-m", "hccl.run", "-n", str(n)] + list(launcher_args) + \
        [os.path.join(WORKERS, worker)] + [str(a) for a in args]
    return subprocess.run(cmd, env=env(extra_env), capture_output=True,
                          text=True, timeout=timeout)


def run_ranks(n, worker, scenario, *args, timeout=120, extra_env=None):
    """Run scenario on n ranks; fail with the ranks' output otherwise."""
    r = launch(n, worker, scenario, *args, timeout=timeout,
               extra_env=extra_env)
    out = r.stdout + r.stderr
    passed = set(int(m) for m in re.findall(
        r"^PASS %s rank (\d+)$" % re.escape(scenario), r.stdout, re.M))
    assert r.returncode == 0 and passed == set(range(n)), \
        "scenario %s on %d ranks: exit %d, passed ranks %s\n%s" % (
            scenario, n, r.returncode, sorted(passed), out[-6000:])
    return r


_runs = {}


def run_scenarios(n, worker, scenarios, timeout=600, extra_env=None):
    """Run several scenarios in one launch (each rank runs them in order,
    stopping at the first failure); cached, so that one test per scenario
    can check its own PASS lines. Returns the CompletedProcess."""
    key = (n, worker, tuple(scenarios), tuple(sorted((extra_env or
                                                      {}).items())))
    if key not in _runs:
        _runs[key] = launch(n, worker, ",".join(scenarios), timeout=timeout,
                            extra_env=extra_env)
    return _runs[key]


def check_scenario(r, n, scenario):
    """Every rank printed PASS for scenario in the run r (the exit status
    is checked by each run's own clean-exit test)."""
    passed = set(int(m) for m in re.findall(
        r"^PASS %s rank (\d+)$" % re.escape(scenario), r.stdout, re.M))
    failed = re.findall(r"^FAIL (\w+) rank (\d+)", r.stdout + r.stderr,
                        re.M)
    assert passed == set(range(n)), \
        "scenario %s on %d ranks: passed on ranks %s%s; exit %d\n%s" % (
            scenario, n, sorted(passed),
            " (failed first: %s)" % sorted(set(failed)) if failed else "",
            r.returncode, (r.stdout + r.stderr)[-8000:])


def shm_entries():
    try:
        return sorted(x for x in os.listdir("/dev/shm")
                      if re.search("ohc|hccl", x, re.I))
    except OSError:
        return []


@pytest.fixture(autouse=True, scope="session")
def no_shm_leftovers():
    """No shared-memory segment of ours outlives the session (entries seen
    at the end must still be there 2 s later, so another job's passing
    segment does not count)."""
    before = set(shm_entries())
    yield
    left = set(shm_entries()) - before
    if left:
        import time
        time.sleep(2)
        left &= set(shm_entries())
    assert not left, "shared-memory segments left behind: %s" % sorted(left)
