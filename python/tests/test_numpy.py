# SPDX-License-Identifier: Apache-2.0
"""numpy collectives against numpy references at 1, 2 and 4 processes,
the bucketed AllReduce, and the errors for arrays HCCL cannot take. One
launch per process count runs every scenario in turn; each test checks
its scenario's PASS line on every rank."""
import pytest

from conftest import check_scenario, run_scenarios

SCENARIOS = ["all_reduce", "reduce", "broadcast", "all_gather",
             "reduce_scatter", "all_to_all", "all_to_all_v", "send_recv",
             "barrier", "bad_arrays", "buckets"]


def _run(n):
    return run_scenarios(n, "np_worker.py", SCENARIOS, timeout=900)


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario(scenario, n):
    check_scenario(_run(n), n, scenario)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_clean_exit(n):
    r = _run(n)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
