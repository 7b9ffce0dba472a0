# SPDX-License-Identifier: Apache-2.0
"""numpy collectives against numpy references at 1, 2 and 4 processes,
the bucketed AllReduce, and the errors for arrays HCCL cannot take."""
import pytest

from conftest import run_ranks

OPS = ["all_reduce", "reduce", "broadcast", "all_gather", "reduce_scatter",
       "all_to_all", "all_to_all_v", "send_recv", "barrier"]


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("op", OPS)
def test_collective(op, n):
    run_ranks(n, "np_worker.py", op, timeout=300)


@pytest.mark.parametrize("n", [1, 2])
def test_bad_arrays(n):
    run_ranks(n, "np_worker.py", "bad_arrays")


@pytest.mark.parametrize("n", [1, 2, 4])
def test_bucketed_all_reduce(n):
    run_ranks(n, "np_worker.py", "buckets")
