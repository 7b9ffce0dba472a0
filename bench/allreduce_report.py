#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench/allreduce.sh's report: OUT holds meta (key=value), ohc.<rep>.json
(all_reduce_test --json) and ompi.<rep>.txt (hccl_test-style rows of the
MPI peer). Per size and implementation: the median time of the runs, the
spread (min-max), busbw at the median, the check results; the markdown
table, a PNG of busbw against size (median line, min-max band) and every
sample as JSON.
usage: allreduce_report.py OUT TABLE.md PLOT.png SAMPLES.json"""
import glob
import json
import os
import re
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROW = re.compile(r"^(\d+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*(\S+)\s*\|\s*([\d.]+)")


def main():
    out, md, png, samples_path = sys.argv[1:5]
    meta = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(out, "meta")) if "=" in l)
    runs = {"OpenHCCL": [], "Open MPI": []}
    for f in sorted(glob.glob(os.path.join(out, "ohc.*.json"))):
        doc = json.load(open(f))
        runs["OpenHCCL"].append({r["bytes"]: (r["time_us"], r["busbw_GBps"], r["check"]) for r in doc["rows"]})
    for f in sorted(glob.glob(os.path.join(out, "ompi.*.txt"))):
        rows = {}
        for line in open(f):
            m = ROW.match(line.strip())
            if m:
                rows[int(m.group(1))] = (float(m.group(2)), float(m.group(5)), m.group(4))
        runs["Open MPI"].append(rows)
    sizes = sorted({b for rs in runs.values() for r in rs for b in r})
    if not sizes or not runs["OpenHCCL"]:
        sys.exit("allreduce_report.py: no OpenHCCL rows in " + out)

    stats = {}
    for name, rs in runs.items():
        for b in sizes:
            ts = [r[b][0] for r in rs if b in r]
            if not ts:
                continue
            med = statistics.median(ts)
            bws = [r[b][1] for r in rs if b in r]
            # busbw at the median time: busbw scales as 1 / time
            bw_med = statistics.median(bws)
            checks = {r[b][2] for r in rs if b in r}
            stats[name, b] = {
                "n": len(ts), "median_us": med, "min_us": min(ts), "max_us": max(ts),
                "busbw_median": bw_med, "busbw_min": min(bws), "busbw_max": max(bws),
                "checks": sorted(checks), "samples_us": ts,
            }

    def cell(name, b, key, fmt):
        s = stats.get((name, b))
        return fmt % s[key] if s else "-"

    def spread(name, b):
        s = stats.get((name, b))
        if not s or s["median_us"] <= 0:
            return "-"
        return "%.2f-%.2f (%d%%)" % (s["min_us"], s["max_us"], round(100 * (s["max_us"] - s["min_us"]) / s["median_us"]))

    lines = [
        "# AllReduce, %s ranks: OpenHCCL beside Open MPI" % meta.get("ranks", "?"),
        "",
        "OpenHCCL %s (commit %s), Open MPI %s (btl vader,self); %s, %s CPUs, Linux %s; host %s, %s." % (
            meta.get("openhccl"), meta.get("openhccl_commit"), meta.get("ompi"), meta.get("cpu"),
            meta.get("cpus"), meta.get("kernel"), meta.get("host"), meta.get("date")),
        "fp32 sum; each implementation ran %s times, interleaved, %s iterations after %s warm-ups per size."
        % (meta.get("reps"), meta.get("iters"), meta.get("warmup")),
        "Time: the median of the runs (us per call) and their spread, min-max (and as % of the median);"
        " busbw (GB/s, nccl-tests factor 2(n-1)/n): the median. Ratio > 1: OpenHCCL faster.",
        "",
        "| bytes | OpenHCCL us | spread | Open MPI us | spread | OpenHCCL busbw | Open MPI busbw | Open MPI/OpenHCCL time | check |",
        "|---:|---:|---|---:|---|---:|---:|---:|---|",
    ]
    for b in sizes:
        o, p = stats.get(("OpenHCCL", b)), stats.get(("Open MPI", b))
        ratio = "%.2fx" % (p["median_us"] / o["median_us"]) if o and p and o["median_us"] > 0 else "-"
        check = ",".join(o["checks"]) if o else "-"
        lines.append("| %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            b, cell("OpenHCCL", b, "median_us", "%.2f"), spread("OpenHCCL", b),
            cell("Open MPI", b, "median_us", "%.2f"), spread("Open MPI", b),
            cell("OpenHCCL", b, "busbw_median", "%.4f"), cell("Open MPI", b, "busbw_median", "%.4f"),
            ratio, check))
    if not runs["Open MPI"]:
        lines += ["", "Open MPI produced no rows."]
    open(md, "w").write("\n".join(lines) + "\n")

    fig, ax = plt.subplots(figsize=(10, 6))
    for name, color in (("OpenHCCL", "tab:blue"), ("Open MPI", "tab:orange")):
        xs = [b for b in sizes if (name, b) in stats]
        if not xs:
            continue
        med = [stats[name, b]["busbw_median"] for b in xs]
        lo = [stats[name, b]["busbw_min"] for b in xs]
        hi = [stats[name, b]["busbw_max"] for b in xs]
        ax.plot(xs, med, marker="o", color=color, label="%s (median of %d)" % (name, len(runs[name])))
        ax.fill_between(xs, lo, hi, color=color, alpha=0.2)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title("AllReduce fp32 sum, %s ranks: OpenHCCL %s vs Open MPI %s\n%s, %s CPUs" % (
        meta.get("ranks"), meta.get("openhccl"), meta.get("ompi"), meta.get("cpu"), meta.get("cpus")))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(png, dpi=100)

    json.dump({"meta": meta, "stats": [dict(impl=k[0], bytes=k[1], **v) for k, v in sorted(stats.items())]},
              open(samples_path, "w"), indent=1)


main()
