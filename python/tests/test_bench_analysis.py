# SPDX-License-Identifier: Apache-2.0
"""bench/analysis.py, the bench scripts' calibration and tables, on small
made-up rows with known answers: the calibration recovers the alpha,
bandwidth and wake the rows were made from, and the tables come out as
compare.sh and sim_validate.sh print them. No library needed; the cost
table is checked against hccl_simulate when the build tree has it."""
import importlib.util
import math
import os

import pytest

from conftest import REPO

_spec = importlib.util.spec_from_file_location("analysis", os.path.join(REPO, "bench", "analysis.py"))
an = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(an)

ALPHA, BETA = 40.0, 1e-3 / 0.05  # us per message, us per byte (0.05 GB/s)


def step_us(nbytes):
    return ALPHA + nbytes * BETA


def test_alpha_is_the_best_1k_latency_else_the_smallest():
    lat = ["8 12 30", "1024 20 %g" % ALPHA, "1024 19 %g" % (ALPHA + 3), "65536 900 1000"]
    assert an.calibrate_alpha(lat, 3) == ALPHA
    assert an.calibrate_alpha(lat, 2) == 19
    # no 1 KiB row: the smallest time of any size; "-": no time
    assert an.calibrate_alpha(["8 - 30", "65536 - 25"], 3) == 25
    assert an.calibrate_alpha(["1024 5 -"], 3) is None


def test_exchange_step_gives_alpha_and_bandwidth():
    # two rounds; the best of each kind counts
    wake = ["2 xchg %g" % (step_us(1024) + 5), "2 xchg1m %g" % step_us(1 << 20),
            "2 xchg %g" % step_us(1024), "2 xchg1m %g" % (step_us(1 << 20) + 900), "4 xchg 1"]
    assert an.exchange_alpha(wake) == pytest.approx(step_us(1024))
    assert an.exchange_bw(wake) == pytest.approx(1e-3 / BETA)
    assert an.exchange_bw(wake[:1]) is None  # no 1 MiB step


def test_stream_bandwidth_is_the_best_mb_per_s():
    rows = ["65536 50 40", "262144 55 51.2", "1048576 - 45"]
    assert an.stream_bw(rows, 3) == pytest.approx(51.2 * 2**20 / 1e9)
    assert an.stream_bw(["65536 - -"], 3) is None


def test_wake_fit_recovers_a_known_wake():
    # step(N) = step(2) + wake x N / cores for N above the cores
    wake, cores, s2 = 135.0, 2, 50.0
    rows = ["2 xchg %g" % s2]
    for n in (4, 8, 16):
        rows += ["%d xchg %g" % (n, s2 + 0.5 * wake * n / cores),
                 "%d xchg-slowest %g" % (n, s2 + wake * n / cores)]
    w, sn, s = an.fit_wake(rows, 8, cores)
    assert (w, sn, s) == (pytest.approx(wake), "590", "50")
    assert an.fit_wake(rows, 8, cores, "pair0")[0] == pytest.approx(wake / 2)
    assert an.fit_wake(rows, 4, cores, each=True)[0] == pytest.approx(wake)
    assert an.fit_wake(rows, 32, cores) is None  # no step at 32 ranks


def test_best_rows_keep_the_fastest_run_and_any_failed_check(tmp_path):
    runs = []
    for i, (us, ck) in enumerate([("12.50", "success"), ("10.25", "success"), ("11.00", "failed")]):
        p = tmp_path / ("raw.%d" % i)
        p.write_text("data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result: | busbw\n"
                     "65536           | %s        | 5.0   | %s       | 6.%d\n"
                     "8               | 1.0%d     | 0.01  | success   | 0.0%d\n" % (us, ck, i, i, i))
        runs.append(str(p))
    assert an.best_rows(runs) == [("8", "1.00", "0.00", "success"), ("65536", "10.25", "6.1", "failed")]


def test_compare_table_renders_times_busbw_and_ratios():
    ohc = ["8 2.00 0.004 success", "1024 4.00 0.25 success"]
    mpi = ["8 3.00 0.003 success", "1024 10.00 0.10 failed"]
    gloo = ["1024 0 0 success"]
    got = an.compare_table("allreduce", "2", [("OpenHCCL", ohc), ("Open MPI", mpi), ("Gloo", gloo)],
                           [("MPICH", "exit 1: MPI_Init failed")])
    assert got == [
        "",
        "### allreduce, 2 ranks",
        "",
        "| bytes | OpenHCCL us | Open MPI us | Gloo us | OpenHCCL busbw | Open MPI busbw | Gloo busbw"
        " | OpenHCCL/Open MPI | OpenHCCL/Gloo |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        "| 8 | 2.00 | 3.00 | - | 0.004 | 0.003 | - | 1.50x | - |",
        "| 1024 | 4.00 | 10.00 | 0 | 0.25 | 0.10 (check failed) | 0 | 2.50x | 0.00x |",
        "",
        "MPICH failed: exit 1: MPI_Init failed",
    ]


def test_summary_is_the_geomean_and_minimum_above_the_threshold():
    ohc = ["1024 1 x y", "65536 10 x y", "1048576 100 x y"]
    peer = ["1024 9 x y", "65536 20 x y", "1048576 800 x y"]
    got = an.compare_summary_row("allgather", "4", "Gloo", ohc, peer, 65536)
    assert got == "| allgather | 4 | Gloo | %.2fx | 2.00x |" % math.sqrt(2 * 8)
    assert an.compare_summary_row("allgather", "4", "Gloo", ohc, peer, 1 << 21) is None
    assert [an.iec(n) for n in (1000, 1536, 65536, 100000, 1 << 20)] == \
        ["1000B", "1.5KiB", "64KiB", "98KiB", "1.0MiB"]


def test_sim_rows_flag_ratios_outside_half_to_double():
    out = ["# hccl_simulate --measure",
           "1024 ring 10.00 4.00 4.5 2.50",
           "65536 ring 100.00 150.00 - 0.67",
           "1048576 ring 1000.00 2500.00 900 0.4"]
    rows = an.sim_rows("allreduce", "4", out)
    assert [r.split()[6:] for r in rows] == [["0.40", "4.5", "0.45", "OUTSIDE"],
                                             ["1.50", "-", "-"],
                                             ["2.50", "900", "0.90", "OUTSIDE"]]
    assert rows[1] == "%-15s %5s %10s %-20s %12s %12s %9s %12s %9s " % (
        "allreduce", "4", "65536", "ring", "100.00", "150.00", "1.50", "-", "-")
    assert an.sim_count(out) == (3, 2, 2)


def test_p2p_tables_order_the_exchange_steps():
    md = an.p2p_tables("rxe0", ["1024 20 40"], ["65536 50 40"],
                       ["2 xchg 50", "2 lat-sleep 120", "4 xchg-slowest 650", "2 xchg1m 9000",
                        "4 xchg 450", "2 xchg 60"], "2")
    assert md[3:6] == ["| bytes | ib_write_lat t_avg us | HcclSend/Recv half round trip us | ib_write_lat/OpenHCCL |",
                       "|---:|---:|---:|---:|", "| 1024 | 20 | 40 | 0.50x |"]
    assert md[9] == "| 65536 | 50 | 40 | 0.80x |"
    assert [r.split(" | ")[0] + " " + r.split(" | ")[2] for r in md[16:21]] == \
        ["| 2 9000 |", "| 4 650 |", "| 2 50 |", "| 4 450 |", "| 2 120 |"]
    assert md[-1] == "Best of the 2 rounds (one per run)."


def test_constants_come_from_hccl_simulate():
    t = an.parse_constants("shm.link shm\nshm.alpha_us 1\nshm.beta_us 5e-05\nshare.wake_us 20\n")
    assert t == {"shm.link": "shm", "shm.alpha_us": 1.0, "shm.beta_us": 5e-05, "share.wake_us": 20.0}
    lib = os.environ.get("OPENHCCL_LIB_DIR", os.path.join(REPO, "build", "src"))
    sim = os.path.join(os.path.dirname(lib), "tools", "simulate", "hccl_simulate")
    if not os.access(sim, os.X_OK):
        pytest.skip("no %s (build hccl_simulate)" % sim)
    t = an.constants(sim)
    # the library's defaults (src/algo/cost.c) are there, rxe its RDMA one
    assert t["rxe.link"] == "rdma" and t["shm.link"] == "shm"
    for net in ("self", "shm", "rxe", "roce100"):
        assert t[net + ".alpha_us"] > 0 and t[net + ".beta_us"] > 0 and t[net + ".gamma_us"] > 0
    assert t["share.wake_us"] > 0 and t["share.turn_kb"] > 0
