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
    # step(N) = step(2) + wake x (N / cores)^2 for N above the cores
    wake, cores, s2 = 135.0, 2, 50.0
    rows = ["2 xchg %g" % s2]
    for n in (4, 8, 16):
        rows += ["%d xchg %g" % (n, s2 + 0.5 * wake * (n / cores) ** 2),
                 "%d xchg-slowest %g" % (n, s2 + wake * (n / cores) ** 2)]
    w, sn, s, kind = an.fit_wake(rows, 8, cores)
    assert (w, sn, s, kind) == (pytest.approx(wake), "2210", "50", "xchg")
    assert an.fit_wake(rows, 8, cores, "pair0")[0] == pytest.approx(wake / 2)
    assert an.fit_wake(rows, 4, cores, each=True)[0] == pytest.approx(wake)
    assert an.fit_wake(rows, 32, cores) is None  # no step at 32 ranks


def test_wake_fit_prefers_the_barrier_steps():
    # a barrier of N ranks is ceil(log2 N) steps, each step(2) + wake x s^2
    wake, cores, s2 = 1.5, 2, 0.25
    rows = ["2 xchg 0.9", "4 xchg 3", "8 xchg 2", "2 barrier %g" % s2]
    for n, steps in ((4, 2), (6, 3), (8, 3)):
        rows.append("%d barrier %g" % (n, steps * (s2 + wake * (n / cores) ** 2)))
    w, sn, s, kind = an.fit_wake(rows, 8, cores)
    assert (w, sn, s, kind) == (pytest.approx(wake), "24.25", "0.25", "barrier")
    assert an.fit_wake(rows, 6, cores, each=True)[0] == pytest.approx(wake)
    # no barrier at 2 ranks: the exchange steps
    assert an.fit_wake([r for r in rows if r != "2 barrier 0.25"], 8, cores)[3] == "xchg"


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


def _scaling_fixture(d):
    """A scaling.sh output folder: 2 and 4 ranks, 2 rounds, 3 sizes of
    AllReduce; OpenHCCL 10 and 30 us a call (median 20) everywhere; Open
    MPI 40 us at 2 ranks (2x slower), 10 us at 4 (2x faster), its second
    4-rank round failed after the first size."""
    head = "data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result: | bus_bandwidth(GB/s):\n"
    raw = d / "raw"
    raw.mkdir()
    sizes = (8, 65536, 1 << 20)

    def run(name, us_of, check="success", upto=3):
        rows = "".join("%-17d | %-14.2f | 0.1 | %-13s | %.5f\n" % (b, us_of(b), check, b / us_of(b) / 1e3)
                       for b in sizes[:upto])
        (raw / name).write_text("the minbytes is 8\n" + head + rows)

    for np in (2, 4):
        run("ohc.allreduce.%d.1" % np, lambda b: 10.0)
        run("ohc.allreduce.%d.2" % np, lambda b: 30.0, "failed" if np == 4 else "success")
        mpi = 40.0 if np == 2 else 10.0
        run("ompi.allreduce.%d.1" % np, lambda b: mpi)
        run("ompi.allreduce.%d.2" % np, lambda b: mpi, upto=1 if np == 4 else 3)
    (raw / "ompi.allreduce.4.2.err").write_text("boom\n")
    (d / "fail.ompi.allreduce.4.2").write_text("exit 1: MPI_Init failed\n")
    (d / "meta").write_text("nps=2 4\nops=allreduce\nreps=2\niters=20\nwarmup=5\nbusy=2\nhost=h\ncpus=2\n")
    (d / "membw").write_text("# ohc_membw_bench ...\n1 10.00 10.00\n2 16.00 8.00\n4 20.00 5.00\n")
    (d / "runs.log").write_text("ohc allreduce 2 1 0 1.5\nompi allreduce 2 1 0 2.5\nompi allreduce 4 2 1 0.5\n")


def test_scaling_tables_ratios_copy_limit_times_and_failures(tmp_path):
    _scaling_fixture(tmp_path)
    meta, st, nps, ops, limits, fails, walls = an.scaling_load(str(tmp_path))
    assert (nps, ops, limits) == (["2", "4"], ["allreduce"], {1: 10.0, 2: 16.0, 4: 20.0})
    assert fails == {("ompi", "allreduce", "4", "2"): "exit 1: MPI_Init failed"}
    assert walls == {"ohc": 1.5, "ompi": 3.0}
    s = st["ohc", "allreduce", "4", 1 << 20]
    assert (s["us"], s["lo"], s["hi"], s["n"], s["failed"]) == (20.0, 10.0, 30.0, 2, True)
    # busbw at the median time: the rows' busbw x time over the median
    assert s["busbw"] == pytest.approx((1 << 20) / 20.0 / 1e3, rel=1e-4)
    md = an.scaling_tables(meta, st, nps, ops, limits, fails, walls)
    assert md[0] == "# Scaling: OpenHCCL beside Open MPI (loaded: 2 busy processes)"
    assert "| AllReduce | 2.00x (2.00x at 8 B) | 0.50x (0.50x at 8 B) |" in md
    i = md.index("## AllReduce")
    assert md[i + 2:i + 7] == ["| bytes | 2 ranks | 4 ranks |", "|---:|---:|---:|",
                               "| 8 B | 2.00x | 0.50x (check failed) |",
                               "| 64 KiB | 2.00x | 0.50x (check failed) |",
                               "| 1 MiB | 2.00x | 0.50x (check failed) |"]
    # the copy limit per rank: N threads' GB/s / N; busbw's fraction of it
    assert "| copy limit per rank | 8.00 | 5.00 |" in md
    assert "| 1 MiB OpenHCCL | 52.43 (6.55) | 52.43 (10.49) |" in md
    assert "| 1 MiB Open MPI | 26.21 (3.28) | 104.86 (20.97) |" in md
    assert "| 8 B | 20.00 (10.00-30.00) | 40.00 (40.00-40.00) | 20.00 (10.00-30.00) | 10.00 (10.00-10.00) |" in md
    # Open MPI's 4-rank 1 MiB: only its first round has the size
    assert md[-5] == "| 1 MiB | 20.00 (10.00-30.00) | 40.00 (40.00-40.00) | 20.00 (10.00-30.00) | 10.00 |"
    assert md[-1] == "The runs took OpenHCCL 2 s, Open MPI 3 s."
    assert md[-3] == "Open MPI, 4 ranks, round 2 failed: exit 1: MPI_Init failed"


def test_scaling_svg_draws_a_line_per_rank_count_and_parity(tmp_path):
    _scaling_fixture(tmp_path)
    meta, st, nps, ops = an.scaling_load(str(tmp_path))[:4]
    svg = an.scaling_svg(meta, st, nps, ops)
    assert svg[0].startswith("<svg") and svg[-1] == "</svg>"
    lines = [s for s in svg if s.startswith("<polyline")]
    assert len(lines) == 2 and all(len(s.split('points="')[1].split()) == 3 for s in lines)
    # the 2x line lies above parity, the 0.5x line below it (y grows down)
    ys = [float(s.split('points="')[1].split()[0].split(",")[1]) for s in lines]
    one = [s for s in svg if s.startswith("<line") and 'stroke="#444"' in s][0]
    assert ys[0] < float(one.split('y1="')[1].split('"')[0]) < ys[1]
    assert an.size_label(8) == "8 B" and an.size_label(3 << 20) == "3 MiB" and an.size_label(1536) == "1536 B"
