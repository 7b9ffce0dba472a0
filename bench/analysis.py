#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The bench scripts' analysis in one place: what bench/compare.sh and
bench/sim_validate.sh compute from their runs' rows, and the tables they
print. The scripts run the tools; this reads the tools' output files and
answers on stdout (values for the script, or markdown / text tables).
Standard library only: it also runs inside the Soft-RoCE VM, on the host's
/usr/bin/python3.

The rows are read the way the awk that used to do this read them (fields
split on blanks, or on '|' for hccl_test rows; a field that is not a number
counts as its numeric prefix, or 0), so the output is byte for byte what
the scripts printed before for the same files.

usage: analysis.py COMMAND ARGS...   (analysis.py -h lists the commands)
The cost model's constants are hccl_simulate's (--constants), never copied
here: `analysis.py constants SIM` prints them."""
import glob
import math
import os
import re
import subprocess
import sys

LOW, HIGH = 0.5, 2.0  # sim_validate.sh: a ratio outside is flagged
P2P_1K, P2P_1M = 1024, 1048576  # the point-to-point probes' sizes

_NUM = re.compile(r"[ \t\n]*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
_STRNUM = re.compile(r"[ \t\n]*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?[ \t\n]*$")


def num(s):
    """s as a number, as awk's s + 0: its numeric prefix, else 0."""
    m = _NUM.match(s)
    return float(m.group(0)) if m else 0.0


def is_num(s):
    """True if s reads as a number as a whole (awk's strnum)."""
    return bool(_STRNUM.match(s))


def awk_eq(s, n):
    """awk's `s == n` for a number n: numeric when s is a number."""
    return num(s) == n if is_num(s) else s == str(n)


def gt0(s):
    """awk's `s > 0`: numeric when s is a number, else a string compare."""
    return num(s) > 0 if is_num(s) else s > "0"


def awk_str(x):
    """A number printed as awk's print does: integers whole, others %.6g."""
    return "%d" % x if x == int(x) and abs(x) < 1e16 else "%.6g" % x


def lines(path):
    """The lines of path, without their newlines (awk's records)."""
    with open(path) as f:
        text = f.read()
    out = text.split("\n")
    if out and out[-1] == "":
        out.pop()
    return out


def iec(n):
    """n bytes as `numfmt --to=iec-i --suffix=B` prints them."""
    units = ["", "Ki", "Mi", "Gi", "Ti", "Pi"]
    x, u = float(n), 0
    while x >= 1024 and u < len(units) - 1:
        x /= 1024
        u += 1
    if u == 0:
        return "%dB" % n
    # numfmt rounds up, one decimal below 10
    if x < 10:
        s = "%.1f" % (math.ceil(x * 10 - 1e-9) / 10)
        if float(s) < 10:
            return s + units[u] + "B"
        x = float(s)
    return "%d%sB" % (math.ceil(x - 1e-9), units[u])


# ---------------------------------------------------------------- constants


def constants(sim):
    """The cost table, {"NET.FIELD": value}, as `SIM --constants` prints it
    (src/algo/cost.c): numbers as floats, the link class a string."""
    out = subprocess.run([sim, "--constants"], check=True, capture_output=True, text=True).stdout
    return parse_constants(out)


def parse_constants(text):
    table = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key:
            table[key] = float(value) if is_num(value) else value
    return table


# ---------------------------------------------------------------- rows


def tool_fields(rec):
    """The fields of an hccl_test-style row ("bytes | us | algbw | check |
    busbw", blanks dropped, at least 5), or None for any other line."""
    if not re.fullmatch(r"[0-9]+ *", rec.split("|")[0]):
        return None
    f = rec.replace(" ", "").split("|")
    return f + [""] * (5 - len(f))


def best_rows(paths):
    """hccl_test-style rows ("bytes | us | algbw | check | busbw") of
    several runs: per size, the best time with its busbw, and the check
    "failed" if any run failed it. [(bytes, us, busbw, check)] by size;
    a missing file is skipped with a message, and sets .missing."""
    us, bw, ck, order = {}, {}, {}, []
    best_rows.missing = False
    for p in paths:
        try:
            recs = lines(p)
        except OSError as e:
            print("analysis.py: %s: %s" % (p, e.strerror), file=sys.stderr)
            best_rows.missing = True
            continue
        for f in map(tool_fields, recs):
            if f is None:
                continue
            b = f[0]
            if b not in us:
                order.append(b)
            if b not in us or num(f[1]) < num(us[b]):
                us[b], bw[b] = f[1], f[4]
            if b not in ck or f[3] == "failed":
                ck[b] = f[3]
    rows = [(b, us[b], bw[b], ck[b]) for b in order]
    return sorted(rows, key=lambda r: (num(r[0]), " ".join(r)))


# ---------------------------------------------------------------- calibration


def calibrate_alpha(lat_lines, col):
    """alpha (us) from p2p.lat ("BYTES IB OHC" lines; col 2: ib_write_lat,
    3: HcclSend/Recv): the best at 1 KiB, else the smallest of any size;
    None if no probe gave a time."""
    m = k = None
    for rec in lat_lines:
        f = rec.split()
        v = f[col - 1] if len(f) >= col else ""
        if v == "-":
            continue
        if m is None or num(v) < m:
            m = num(v)
        b = f[0] if f else ""
        if awk_eq(b, P2P_1K) and (k is None or num(v) < k):
            k = num(v)
    return k if k is not None else m


def _wake_steps(wake_lines, kinds):
    """The best time of each (ranks, kind) of p2p.wake ("RANKS KIND US"),
    the times kept as written: {kind: {ranks: us}}."""
    best = {k: {} for k in kinds}
    for rec in wake_lines:
        f = rec.split() + ["", "", ""]
        if f[1] in best and re.fullmatch(r"[0-9.]+", f[2]):
            d = best[f[1]]
            if f[0] not in d or num(f[2]) < num(d[f[0]]):
                d[f[0]] = f[2]
    return best


def _pair_steps(wake_lines):
    """The best time (us) of each kind of 2-rank step in p2p.wake."""
    best = {}
    for rec in wake_lines:
        f = rec.split() + ["", "", ""]
        if awk_eq(f[0], 2) and re.fullmatch(r"[0-9.]+", f[2]):
            if f[1] not in best or num(f[2]) < best[f[1]]:
                best[f[1]] = num(f[2])
    return best


def exchange_alpha(wake_lines):
    """The best 2-rank 1 KiB exchange step of p2p.wake (us), or None."""
    return _pair_steps(wake_lines).get("xchg")


def exchange_bw(wake_lines):
    """GB/s of the 2-rank exchange step: 1 MiB over its growth from 1 KiB
    to 1 MiB (best of the rounds each); None if either is missing or it
    did not grow."""
    s = _pair_steps(wake_lines)
    if "xchg" not in s or "xchg1m" not in s:
        return None
    d = s["xchg1m"] - s["xchg"]
    return (P2P_1M - P2P_1K) / (d * 1e3) if d > 0 else None


def stream_bw(bw_lines, col):
    """GB/s of p2p.bw's best one-way MB/s (MB = 2^20 bytes) in col; None
    if none."""
    m = 0.0
    for rec in bw_lines:
        f = rec.split()
        v = f[col - 1] if len(f) >= col else ""
        if v != "-" and num(v) > m:
            m = num(v)
    return m * 1048576 / 1e9 if m else None


def _barrier_rounds(n):
    """The steps of an n-rank HcclBarrier (dissemination): ceil(log2 n)."""
    return max(1, (int(n) - 1).bit_length())


def fit_wake(wake_lines, np, cores, mode="slowest", each=False):
    """The wake (us) for np ranks on cores CPUs: with s = N / cores ranks
    per CPU above 1, a step of N ranks costs 2 ranks' step plus wake x s x
    s (tools/simulate: a rank's turn comes after the s - 1 others' of its
    CPU). The steps are p2p.wake's HcclBarrier at N ranks ("N barrier US",
    rank 0's time per barrier over its ceil(log2 N) steps) where the run
    has them for np and 2 ranks, else its 1 KiB exchange steps (mode
    "slowest": the slowest rank's where the run has it, else pair 0's).
    Least squares over every N above cores (each: np's alone), never below
    0. (wake, step(np), step(2), "barrier" or "xchg"), or None without
    np's or 2 ranks' steps."""
    s = _wake_steps(wake_lines, ["xchg", "xchg-slowest", "barrier"])
    x, slow, bar = s["xchg"], s["xchg-slowest"], s["barrier"]
    np = str(np)
    if np in bar and "2" in bar:
        kind, have = "barrier", bar

        def step(n):
            return "%.4g" % (num(bar[n]) / _barrier_rounds(num(n)))
    elif np in x and "2" in x:
        kind, have = "xchg", x

        def step(n):
            return slow[n] if mode == "slowest" and n in slow else x[n]
    else:
        return None
    sd = ss = 0.0
    for n in sorted(have, key=num):
        if num(n) > cores and (not each or num(n) == num(np)):
            k = num(n) / cores
            sd += (num(step(n)) - num(step("2"))) * k * k
            ss += k ** 4
    w = sd / ss if ss > 0 else 0.0
    return max(w, 0.0), step(np), step("2"), kind


# ---------------------------------------------------------------- sim_validate


def sim_ratios(sim_lines):
    """The ratios of `hccl_simulate --measure` output ("BYTES ALGO
    MEASURED MODEL SIMULATED ..." rows): per size (bytes, algo, measured,
    model, simulated, model/measured, simulated/measured or "-" without a
    simulation, "OUTSIDE" or ""), the ratios "%.2f"; OUTSIDE when the
    model's ratio is outside [LOW, HIGH]."""
    out = []
    for rec in sim_lines:
        f = rec.split() + [""] * 5
        if not (re.fullmatch(r"[0-9]+", f[0]) and re.fullmatch(r"[0-9.]+", f[2]) and re.fullmatch(r"[0-9.]+", f[3])):
            continue
        b, alg, m, p, q = f[:5]
        r = "%.2f" % (num(p) / num(m))
        rs = "%.2f" % (num(q) / num(m)) if re.fullmatch(r"[0-9.eE+]+", q) else "-"
        flag = "OUTSIDE" if float(r) < LOW or float(r) > HIGH else ""
        out.append((b, alg, m, p, q, r, rs, flag))
    return out


def sim_rows(op, np, sim_lines):
    """sim_validate.sh's rows of one op and rank count, as printed."""
    out = []
    for b, alg, m, p, q, r, rs, flag in sim_ratios(sim_lines):
        out.append("%-15s %5s %10s %-20s %12s %12s %9s %12s %9s %s" % (op, np, b, alg, m, p, r, q, rs, flag))
    return out


def sim_count(sim_lines):
    """(sizes, models outside [LOW, HIGH], simulations outside or
    missing) of `hccl_simulate --measure` output."""
    rows = sim_ratios(sim_lines)
    sbad = sum(1 for r in rows if r[6] == "-" or not LOW <= float(r[6]) <= HIGH)
    return len(rows), sum(1 for r in rows if r[7]), sbad


# ---------------------------------------------------------------- compare.sh


def _ratio(a, b):
    """a / b as "%.2fx", "-" without both or with b <= 0."""
    if a == "" or b == "" or num(b) <= 0:
        return "-"
    return "%.2fx" % (num(a) / num(b))


def compare_table(op, np, runs, failed):
    """One markdown table of compare.sh: runs = [(label, rows)], rows the
    lines of best_rows' files ("bytes us busbw check"), OpenHCCL first;
    failed = [(label, why)]. Times, busbw and busbw ratios OpenHCCL/peer,
    taken from the times (same bytes, same factor: busbw is printed too
    coarsely for small sizes)."""
    out = ["", "### %s, %s ranks" % (op, np), ""]
    cols, sizes = [], []
    for _, rows in runs:
        d = {}
        for rec in rows:
            f = rec.split() + ["", "", "", ""]
            d[f[0]] = f[1:4]
            if f[0] not in sizes:
                sizes.append(f[0])
        cols.append(d)
    names = [n for n, _ in runs]
    h = "| bytes" + "".join(" | %s us" % n for n in names) + "".join(" | %s busbw" % n for n in names)
    h += "".join(" | OpenHCCL/%s" % n for n in names[1:])
    out += [h + " |", "|---:" + "|---:" * (2 * len(names) + len(names[1:])) + "|"]
    for s in sizes:
        cell = [c.get(s, ["", "", ""]) for c in cols]
        line = "| " + s
        line += "".join(" | " + (c[0] or "-") for c in cell)
        line += "".join(" | " + (c[1] or "-") + (" (check failed)" if c[2] == "failed" else "") for c in cell)
        line += "".join(" | " + _ratio(c[0], cell[0][0]) for c in cell[1:])
        out.append(line + " |")
    for name, why in failed:
        out += ["", "%s failed: %s" % (name, why)]
    return out


def compare_summary_row(op, np, peer, ohc_rows, peer_rows, min_bytes):
    """The summary row of one peer: geometric mean and minimum of the
    OpenHCCL/peer busbw ratio (the time ratio) at >= min_bytes; None
    without a size to compare."""

    def keyed(rows):
        return {f[0]: f[1:] for f in (r.split() for r in rows) if f}

    a, b = keyed(ohc_rows), keyed(peer_rows)
    logs, lo = [], None
    for k in sorted(set(a) & set(b), key=lambda s: s.encode()):
        f = [k] + a[k] + b[k] + [""] * 5
        if not (is_num(f[0]) and num(f[0]) >= min_bytes and gt0(f[1]) and gt0(f[4])):
            continue
        r = num(f[4]) / num(f[1])
        logs.append(math.log(r))
        lo = r if lo is None or r < lo else lo
    if not logs:
        return None
    return "| %s | %d | %s | %.2fx | %.2fx |" % (op, int(num(np)), peer, math.exp(sum(logs) / len(logs)), lo)


def p2p_tables(dev, lat_lines, bw_lines, wake_lines, cpus):
    """compare.sh -R's point-to-point tables: HcclSend/Recv against
    ib_write_lat and ib_write_bw, then p2p.wake's exchange steps (each
    rank count's and kind's best; none without p2p.wake, wake_lines
    None)."""

    def ratio(a, b):
        return "%.2fx" % (num(a) / num(b)) if gt0(a) and gt0(b) else "-"

    def row(rec, flip):
        f = rec.split() + ["", "", ""]
        r = ratio(f[2], f[1]) if flip else ratio(f[1], f[2])
        return "| %s | %s | %s | %s |" % (f[0], f[1], f[2], r)

    out = ["", "### point to point, 2 processes on %s" % dev, ""]
    out += ["| bytes | ib_write_lat t_avg us | HcclSend/Recv half round trip us | ib_write_lat/OpenHCCL |", "|---:|---:|---:|---:|"]
    out += [row(r, False) for r in lat_lines]
    out += ["", "| bytes | ib_write_bw MB/s | HcclSend/Recv MB/s | OpenHCCL/ib_write_bw |", "|---:|---:|---:|---:|"]
    out += [row(r, True) for r in bw_lines]
    out += ["", "MB = 2^20 bytes; ib_write_bw's BW average; OpenHCCL's numbers from", "bench/verbs_p2p.c (its `lat` ping-pong for the latency)."]
    if wake_lines is None:
        return out
    out += ["", "| ranks | 1 KiB message (unless named), %s CPUs | us |" % cpus, "|---:|---|---:|"]
    best = {}
    for rec in wake_lines:
        f = rec.split() + ["", "", ""]
        if re.fullmatch(r"[0-9.]+", f[2]):
            k = (f[0], f[1])
            if k not in best or num(f[2]) < num(best[k]):
                best[k] = f[2]
    what = {
        "xchg": "exchange step (HcclBatchSendRecv with rank + N/2, all at once)",
        "xchg-slowest": "1 KiB exchange step, its slowest rank",
        "xchg1m": "exchange step of 1 MiB",
    }
    # the kinds in reverse byte order, then by rank count (sort -k2,2r -k1,1n)
    for (n, kind), us in sorted(best.items(), key=lambda kv: (_rev(kv[0][1]), num(kv[0][0]), kv[0][0])):
        out.append("| %s | %s | %s |" % (n, what.get(kind, "ping-pong half round trip, OPENHCCL_SPIN_US=0"), us))
    rounds = sum(1 for r in wake_lines if r.startswith("2 xchg "))
    out += ["", "Best of the %d rounds (one per run)." % rounds]
    return out


def _rev(s):
    """A key that sorts strings in reverse byte order."""
    return tuple(-c for c in s.encode()) + (1,)


# ---------------------------------------------------------------- scaling.sh

SCALING_IMPLS = (("ohc", "OpenHCCL"), ("ompi", "Open MPI"))
SCALING_OPS = {"allreduce": "AllReduce", "allgather": "AllGather", "reduce_scatter": "ReduceScatter",
               "broadcast": "Broadcast", "reduce": "Reduce", "alltoall": "AlltoAll"}
SCALING_LARGEST = 3  # the copy-limit table: this many of the largest sizes
SCALING_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def size_label(b):
    """8 -> "8 B", 65536 -> "64 KiB"; sizes that are no whole KiB/MiB/GiB
    stay in bytes."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return "%d %s" % (b >> shift, unit)
    return "%d B" % b


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def read_meta(path):
    """key=value lines as a dict ({} without the file)."""
    return dict(r.split("=", 1) for r in _read_or_none(path) or [] if "=" in r)


def run_rows(recs):
    """{bytes: (us, busbw, check)} of one tool run's output lines."""
    rows = {}
    for f in map(tool_fields, recs):
        if f is not None:
            rows[int(f[0])] = (num(f[1]), num(f[4]), f[3])
    return rows


def membw_limits(recs):
    """ohc_membw_bench's lines ("THREADS GBPS PER_THREAD") as {threads:
    GB/s copied by all of them together}; the best where a count repeats."""
    out = {}
    for rec in recs:
        f = rec.split()
        if len(f) >= 2 and f[0].isdigit() and is_num(f[1]):
            out[int(f[0])] = max(out.get(int(f[0]), 0.0), num(f[1]))
    return out


def exchange_floor(recs):
    """ohc_membw_bench -x's "floor_us US" line: microseconds per exchange
    of a cache line between two CPUs, or None."""
    for rec in recs:
        f = rec.split()
        if len(f) == 2 and f[0] == "floor_us" and is_num(f[1]):
            return num(f[1])
    return None


def scaling_stats(runs):
    """runs: {(impl, op, np): [rows of each run]} (run_rows'). Per key
    and size: {"us": median time, "lo", "hi": its spread, "busbw": median
    busbw, "n": runs with the size, "failed": any check failed}."""
    st = {}
    for key, rs in runs.items():
        sizes = sorted({b for r in rs for b in r})
        for b in sizes:
            got = [r[b] for r in rs if b in r]
            us = [g[0] for g in got]
            m = median(us)
            # busbw at the median time (busbw x time is the run's bytes)
            bt = [g[0] * g[1] for g in got if g[0] > 0 and g[1] > 0]
            bw = max(bt) / m if bt and m > 0 else median([g[1] for g in got])
            st[key + (b,)] = {"us": m, "lo": min(us), "hi": max(us), "busbw": bw,
                              "n": len(got), "failed": any(g[2] == "failed" for g in got)}
    return st


def scaling_ratio(st, op, np, b):
    """Open MPI's median time / OpenHCCL's at one size, or None."""
    o, p = st.get(("ohc", op, np, b)), st.get(("ompi", op, np, b))
    if not o or not p or o["us"] <= 0:
        return None
    return p["us"] / o["us"]


def _cell_ratio(st, op, np, b):
    r = scaling_ratio(st, op, np, b)
    if r is None:
        return "-"
    bad = any(st.get((i, op, np, b), {}).get("failed") for i, _ in SCALING_IMPLS)
    return "%s%s" % (_fmt_ratio(r), " (check failed)" if bad else "")


def _fmt_ratio(r):
    """A ratio with two decimals, two significant digits below 0.1 (not
    0.00x)."""
    d = 2 if r >= 0.1 or r <= 0 else min(9, 1 - math.floor(math.log10(r)))
    return "%.*fx" % (d, r)


def scaling_tables(meta, st, nps, ops, limits, fails, walls):
    """scaling.sh's markdown: a summary, then per op the ratio table
    (rows: sizes, columns: rank counts), the largest sizes' busbw against
    the copy limit, and the times; each op's failed runs under its
    tables. fails: {(impl, op, np, rep): why}; walls: {impl: seconds}."""
    label = dict(SCALING_IMPLS)
    loaded = meta.get("busy", "0") not in ("", "0")
    reps = meta.get("reps", "?")
    title = "# Scaling: OpenHCCL beside Open MPI%s" % (" (loaded: %s busy processes)" % meta["busy"] if loaded else "")
    out = [title, ""]
    out.append("%s, %s CPUs, Linux %s; host %s, %s. OpenHCCL %s (%s); Open MPI %s (%s)." % (
        meta.get("cpu", "?"), meta.get("cpus", "?"), meta.get("kernel", "?"), meta.get("host", "?"),
        meta.get("date", "?"), meta.get("openhccl", "?"), meta.get("commit", "?"), meta.get("ompi", "?"),
        meta.get("mpirun", "?")))
    out.append("fp32 (sum, root 0); %s iterations after %s warm-ups per size; %s rounds, each running both "
               "implementations in turn. A time is the median of the runs (us per call)." % (
                   meta.get("iters", "?"), meta.get("warmup", "?"), reps))
    if loaded:
        out.append("Loaded: one busy process per online CPU (%s) ran beside the benchmark the whole time." % meta["busy"])
    if meta.get("fresh") == "1":
        out.append("Fresh inputs (-F): both implementations copied their input in again before each call, timed.")
    if meta.get("cut"):
        out.append("Not complete: %s." % meta["cut"])
    out += ["", "Ratios: Open MPI's time / OpenHCCL's, > 1: OpenHCCL faster.", ""]

    # summary: geomean and minimum of each op's ratios per rank count
    out += ["| op | " + " | ".join("%s ranks: geomean (min at)" % n for n in nps) + " |",
            "|---|" + "---:|" * len(nps)]
    for op in ops:
        cells = []
        for np in nps:
            rs = [(scaling_ratio(st, op, np, b), b) for (i, o, n, b) in st if i == "ohc" and o == op and n == np]
            rs = [(r, b) for r, b in rs if r]
            if not rs:
                cells.append("-")
                continue
            g = math.exp(sum(math.log(r) for r, _ in rs) / len(rs))
            lo = min(rs)
            cells.append("%s (%s at %s)" % (_fmt_ratio(g), _fmt_ratio(lo[0]), size_label(lo[1])))
        out.append("| %s | %s |" % (SCALING_OPS.get(op, op), " | ".join(cells)))

    if limits:
        out += ["", "Copy limit (`ohc_membw_bench`: memcpy by N threads at once, each bound to a CPU):", "",
                "| threads | copied GB/s, all | per thread |", "|---:|---:|---:|"]
        out += ["| %d | %.2f | %.2f |" % (t, g, g / t) for t, g in sorted(limits.items())]
    if meta.get("floor_us") and not loaded:  # loaded: measured beside the busy processes
        out += ["", scaling_floor_line(meta, st)]

    for op in ops:
        name = SCALING_OPS.get(op, op)
        sizes = sorted({b for (i, o, n, b) in st if o == op})
        out += ["", "## %s" % name, ""]
        if not sizes:
            out.append("No rows.")
        else:
            out += ["| bytes | " + " | ".join("%s ranks" % n for n in nps) + " |", "|---:|" + "---:|" * len(nps)]
            for b in sizes:
                out.append("| %s | %s |" % (size_label(b), " | ".join(_cell_ratio(st, op, np, b) for np in nps)))
            big = sizes[-SCALING_LARGEST:]
            if limits:
                out += ["", "%s busbw (GB/s) at the largest sizes, and its fraction of the copy limit per rank "
                        "(N threads' copy GB/s / N):" % name, "",
                        "| bytes | " + " | ".join("%s ranks" % n for n in nps) + " |", "|---|" + "---:|" * len(nps),
                        "| copy limit per rank | %s |" % " | ".join(
                            "%.2f" % (limits[int(n)] / int(n)) if int(n) in limits else "-" for n in nps)]
                for b in reversed(big):
                    for impl, lb in SCALING_IMPLS:
                        cells = []
                        for np in nps:
                            s = st.get((impl, op, np, b))
                            lim = limits.get(int(np))
                            if not s:
                                cells.append("-")
                            elif lim:
                                cells.append("%.2f (%.2f)" % (s["busbw"], s["busbw"] / (lim / int(np))))
                            else:
                                cells.append("%.2f" % s["busbw"])
                        out.append("| %s %s | %s |" % (size_label(b), lb, " | ".join(cells)))
            out += ["", "%s times, us (median; min-max over the runs):" % name, "",
                    "| bytes | " + " | ".join("%s %s" % (n, label[i]) for n in nps for i, _ in SCALING_IMPLS) + " |",
                    "|---:|" + "---:|" * (len(nps) * len(SCALING_IMPLS))]
            for b in sizes:
                cells = []
                for np in nps:
                    for impl, _ in SCALING_IMPLS:
                        s = st.get((impl, op, np, b))
                        if not s:
                            cells.append("-")
                        elif s["n"] > 1:
                            cells.append("%.2f (%.2f-%.2f)" % (s["us"], s["lo"], s["hi"]))
                        else:
                            cells.append("%.2f" % s["us"])
                out.append("| %s | %s |" % (size_label(b), " | ".join(cells)))
        bad = sorted((int(n), r, i, why) for (i, o, n, r), why in fails.items() if o == op)
        if bad:
            out.append("")
            out += ["%s, %s ranks, round %s failed: %s" % (label.get(i, i), n, r, why) for n, r, i, why in bad]
    if walls:
        out += ["", "The runs took %s." % ", ".join("%s %.0f s" % (label.get(i, i), w) for i, w in sorted(walls.items()))]
    return out


def _svg_text(x, y, s, anchor="middle", size=11, extra=""):
    esc = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return '<text x="%.1f" y="%.1f" font-size="%d" text-anchor="%s"%s>%s</text>' % (x, y, size, anchor, extra, esc)


def scaling_floor_line(meta, st):
    """The exchange floor, and how far above it each implementation's
    smallest AllReduce at 2 ranks came (the rest is software)."""
    fl = num(meta["floor_us"])
    line = ("Exchange floor (`ohc_membw_bench -x`: two CPUs hand a cache line back and forth, the least "
            "any exchange between two ranks takes, measured in this run): %.3f us." % fl)
    sizes = sorted({b for (i, o, n, b) in st if o == "allreduce" and n == "2"})
    if not sizes:
        return line
    above = []
    for impl, lb in SCALING_IMPLS:
        s = st.get((impl, "allreduce", "2", sizes[0]))
        if s:
            above.append("%s %.2f us (%.2f above it)" % (lb, s["us"], s["us"] - fl))
    if above:
        line += " %s AllReduce at 2 ranks: %s." % (size_label(sizes[0]), ", ".join(above))
    return line


def scaling_svg(meta, st, nps, ops):
    """The ratio against the size, one line per rank count, one panel per
    op, as SVG (no plotting package needed: it is written on machines
    where nothing is installed). Log axes; the line at 1 is parity."""
    cols = min(3, max(1, len(ops)))
    rows = (len(ops) + cols - 1) // cols
    pw, ph, ml, mr, mt, mb = 380, 260, 52, 12, 26, 40
    top = 64
    W, H = cols * pw, top + rows * ph
    ratios = [r for (i, op, np, b) in st if i == "ohc" for r in [scaling_ratio(st, op, np, b)] if r]
    lo = min([0.5] + ratios) / 1.15
    hi = max([2.0] + ratios) * 1.15
    sizes = sorted({b for (_, _, _, b) in st}) or [1, 2]
    x0, x1 = math.log2(max(sizes[0], 1)), math.log2(max(sizes[-1], 2))
    if x1 <= x0:
        x1 = x0 + 1
    loaded = meta.get("busy", "0") not in ("", "0")
    ylo, yhi = math.log10(lo), math.log10(hi)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">' % (W, H),
           '<rect width="%d" height="%d" fill="white"/>' % (W, H),
           _svg_text(W / 2, 20, "Open MPI time / OpenHCCL time (> 1: OpenHCCL faster)%s; %s, %s CPUs" % (
               ", loaded (%s busy processes)" % meta["busy"] if loaded else "", meta.get("host", "?"),
               meta.get("cpus", "?")), size=14)]
    for k, np in enumerate(nps):  # legend
        x = 20 + k * 110
        c = SCALING_COLORS[k % len(SCALING_COLORS)]
        out.append('<line x1="%d" y1="42" x2="%d" y2="42" stroke="%s" stroke-width="2"/>' % (x, x + 24, c))
        out.append(_svg_text(x + 30, 46, "%s ranks" % np, anchor="start"))
    # ticks outward from 1, each at least 16 px from the last one kept
    per = (ph - mt - mb) / (yhi - ylo)
    yticks = [1]
    for side in ((0.5, 0.25, 0.1, 0.03, 0.01, 0.001), (2, 4, 10, 30, 100, 1000)):
        last = 1
        for t in side:
            if lo <= t <= hi and abs(math.log10(t) - math.log10(last)) * per >= 16:
                yticks.append(t)
                last = t
    step = max(1, int(math.ceil((x1 - x0) / 8)))
    # every step-th power of 2, and the first size where it is a step away
    xticks = [e for e in range(int(math.ceil(x0)), int(x1) + 1) if e % step == 0]
    if not xticks or xticks[0] - math.ceil(x0) >= step:
        xticks.insert(0, int(math.ceil(x0)))
    for k, op in enumerate(ops):
        ox, oy = (k % cols) * pw, top + (k // cols) * ph
        L, R, T, B = ox + ml, ox + pw - mr, oy + mt, oy + ph - mb

        def px(b):
            return L + (math.log2(b) - x0) / (x1 - x0) * (R - L)

        def py(r):
            return B - (math.log10(r) - ylo) / (yhi - ylo) * (B - T)

        out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>' % (L, T, R - L, B - T))
        out.append(_svg_text((L + R) / 2, oy + 16, SCALING_OPS.get(op, op), size=13, extra=' font-weight="bold"'))
        for t in yticks:
            out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"%s/>' % (
                L, py(t), R, py(t), "#444" if t == 1 else "#ddd", "" if t == 1 else ' stroke-dasharray="3,3"'))
            out.append(_svg_text(L - 4, py(t) + 4, "%g" % t, anchor="end", size=10))
        for e in xticks:
            x = L + (e - x0) / (x1 - x0) * (R - L)
            out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (x, T, x, B))
            out.append(_svg_text(x, B + 14, size_label(1 << e).replace(" ", ""), size=10))
        out.append(_svg_text((L + R) / 2, B + 30, "bytes", size=10))
        if not any(scaling_ratio(st, op, np, b) for np in nps for b in sizes):
            out.append(_svg_text((L + R) / 2, (T + B) / 2, "no ratios: see scaling.md", size=12))
        for j, np in enumerate(nps):
            pts = [(b, scaling_ratio(st, op, np, b)) for b in sizes]
            pts = [(px(b), py(r)) for b, r in pts if r]
            if not pts:
                continue
            c = SCALING_COLORS[j % len(SCALING_COLORS)]
            out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>' % (
                c, " ".join("%.1f,%.1f" % p for p in pts)))
            out += ['<circle cx="%.1f" cy="%.1f" r="2" fill="%s"/>' % (x, y, c) for x, y in pts]
    out.append("</svg>")
    return out


def scaling_load(d):
    """A scaling.sh output folder: (meta, stats, nps, ops, limits,
    fails, walls). Runs are DIR/raw/IMPL.OP.NP.REP (the tools' stdout),
    failures DIR/fail.IMPL.OP.NP.REP, the copy limit DIR/membw, each run's
    seconds DIR/runs.log ("IMPL OP NP REP STATUS SECONDS")."""
    meta = read_meta(os.path.join(d, "meta"))
    runs, fails, walls = {}, {}, {}
    for p in sorted(glob.glob(os.path.join(d, "raw", "*.*.*.*"))):
        f = os.path.basename(p).split(".")
        if len(f) != 4 or not f[3].isdigit():
            continue
        runs.setdefault((f[0], f[1], f[2]), []).append(run_rows(lines(p)))
    for p in glob.glob(os.path.join(d, "fail.*.*.*.*")):
        f = os.path.basename(p).split(".")
        if len(f) == 5:
            fails[tuple(f[1:])] = " ".join(lines(p)).strip()
    for rec in _read_or_none(os.path.join(d, "runs.log")) or []:
        f = rec.split()
        if len(f) == 6 and is_num(f[5]):
            walls[f[0]] = walls.get(f[0], 0.0) + num(f[5])
    keys = set(runs) | {k[:3] for k in fails}
    nps = meta.get("nps", "").split() or sorted({k[2] for k in keys}, key=int)
    ops = meta.get("ops", "").split() or sorted({k[1] for k in keys})
    membw = _read_or_none(os.path.join(d, "membw")) or []
    limits = membw_limits(membw)
    floor = exchange_floor(membw)
    if floor is not None:
        meta["floor_us"] = "%.3f" % floor
    return meta, scaling_stats(runs), nps, ops, limits, fails, walls


# ---------------------------------------------------------------- CLI


def _read_or_none(path):
    try:
        return lines(path)
    except OSError:
        return None


def _label_args(args):
    """["impl=Label", ...] as [(impl, label)]."""
    return [tuple(a.split("=", 1)) for a in args]


def main(argv):
    cmds = {
        "constants": "SIM: the cost table of hccl_simulate SIM, NET.FIELD VALUE lines",
        "best": "FILES...: compare.sh's per-size best of hccl_test-style runs, 'bytes us busbw check'",
        "best-hccl": "FILES...: the same as an hccl_test output (sim_validate.sh's --measure input)",
        "alpha": "DIR COL: alpha (us) from DIR/p2p.lat's column COL, then (COL 3) DIR/p2p.wake's 2-rank 1 KiB exchange step if smaller",
        "xchg-bw": "DIR: GB/s of the 2-rank exchange step, 1 MiB against 1 KiB, DIR/p2p.wake",
        "stream-bw": "DIR COL: GB/s of DIR/p2p.bw's best MB/s in column COL",
        "wake": "DIR NP CORES MODE EACH: 'WAKE STEP(NP) STEP(2) KIND' from DIR/p2p.wake",
        "sim-rows": "OP NP FILE: sim_validate.sh's rows from hccl_simulate --measure output",
        "sim-count": "FILES...: 'SIZES OUTSIDE SIM_OUTSIDE' of hccl_simulate --measure outputs",
        "table": "OUT OP NP IMPL=LABEL...: compare.sh's markdown table of OP at NP ranks",
        "summary": "OUT MIN_BYTES NPS OPS PEER=LABEL...: compare.sh's summary table",
        "p2p": "OUT: compare.sh -R's point-to-point tables",
        "scaling": "OUT: scaling.sh's markdown tables from OUT's runs",
        "scaling-svg": "OUT: scaling.sh's plot (SVG) from OUT's runs",
    }
    if len(argv) < 2 or argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        for c, d in cmds.items():
            print("  %-10s %s" % (c, d), file=sys.stderr)
        return 2
    cmd, a = argv[1], argv[2:]
    out = []
    if cmd == "constants":
        out = ["%s %s" % (k, v if isinstance(v, str) else awk_str(v) if v == int(v) else repr(v)) for k, v in constants(a[0]).items()]
    elif cmd in ("best", "best-hccl"):
        rows = best_rows(a)
        if cmd == "best":
            out = [" ".join(r[:4]) for r in rows]
        else:
            out = ["data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:"]
            out += ["%s | %s | 0 | success" % (r[0], r[1]) for r in rows]
        if out:
            print("\n".join(out))
        return 2 if best_rows.missing else 0
    elif cmd == "alpha":
        v = calibrate_alpha(_read_or_none(a[0] + "/p2p.lat") or [], int(a[1]))
        x = exchange_alpha(_read_or_none(a[0] + "/p2p.wake") or []) if a[1] == "3" else None
        out = [awk_str(v)] if v is not None else []
        if out and x is not None and x < v:
            out.append(awk_str(x))
    elif cmd == "xchg-bw":
        v = exchange_bw(_read_or_none(a[0] + "/p2p.wake") or [])
        out = ["%.4g" % v] if v is not None else []
    elif cmd == "stream-bw":
        v = stream_bw(_read_or_none(a[0] + "/p2p.bw") or [], int(a[1]))
        out = ["%.4g" % v] if v is not None else []
    elif cmd == "wake":
        w = fit_wake(lines(a[0] + "/p2p.wake"), a[1], num(a[2]), a[3], a[4] == "1")
        out = ["%.4g %s %s %s" % w] if w else []
    elif cmd == "sim-rows":
        out = sim_rows(a[0], a[1], lines(a[2]))
    elif cmd == "sim-count":
        out = ["%d %d %d" % sim_count([r for p in a for r in _read_or_none(p) or []])]
    elif cmd == "table":
        d, op, np, impls = a[0], a[1], a[2], _label_args(a[3:])
        if _read_or_none("%s/ohc.%s.%s" % (d, op, np)) is None:
            return 0
        runs = [(lb, _read_or_none("%s/%s.%s.%s" % (d, i, op, np))) for i, lb in impls]
        runs = [(lb, rs) for lb, rs in runs if rs]
        failed = []
        for i, lb in impls:
            why = _read_or_none("%s/fail.%s.%s.%s" % (d, i, op, np))
            if why is not None:
                failed.append((lb, "\n".join(why).rstrip("\n")))
        out = compare_table(op, np, runs, failed)
    elif cmd == "summary":
        d, minb, nps, ops, peers = a[0], int(a[1]), a[2].split(), a[3].split(), _label_args(a[4:])
        at = ">= " + iec(minb)
        out = ["| collective | ranks | peer | OpenHCCL/peer busbw, geomean %s | min %s |" % (at, at), "|---|---:|---|---:|---:|"]
        for np in nps:
            for op in ops:
                ohc = _read_or_none("%s/ohc.%s.%s" % (d, op, np))
                for i, lb in peers:
                    rows = _read_or_none("%s/%s.%s.%s" % (d, i, op, np))
                    if ohc is None or rows is None:
                        continue
                    r = compare_summary_row(op, np, lb, ohc, rows, minb)
                    out += [r] if r else []
    elif cmd == "p2p":
        lat = _read_or_none(a[0] + "/p2p.lat")
        if not lat:
            return 0
        dev = (_read_or_none(a[0] + "/rdma") or [""])[0].split(" ")[0]
        wake = _read_or_none(a[0] + "/p2p.wake")
        cpus = _read_or_none(a[0] + "/cpus")
        out = p2p_tables(dev, lat, _read_or_none(a[0] + "/p2p.bw") or [], wake or None, "\n".join(cpus) if cpus is not None else "?")
    elif cmd == "scaling":
        out = scaling_tables(*scaling_load(a[0]))
    elif cmd == "scaling-svg":
        meta, st, nps, ops = scaling_load(a[0])[:4]
        out = scaling_svg(meta, st, nps, ops)
    if out:
        print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
