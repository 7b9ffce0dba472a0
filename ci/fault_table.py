#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Render ci/soak.sh's results (one JSON object per line) as the fault
table of the README: fault x transport -> outcome, time to error, what was
logged, leaks. Exit status 1 when any scenario hung, gave a wrong result or
ended otherwise than expected."""
import json
import sys


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    bad = 0
    print("| fault | transport | outcome (expected) | ops | to the first "
          "error | to the end | ERROR / WARN lines | first ERROR line "
          "| shm left |")
    print("|---|---|---|---:|---:|---:|---:|---|---:|")
    for r in rows:
        ok = r["outcome"] == r["expect"]
        bad += (not ok) or r["outcome"] in ("hang", "wrong") or r["shm_left"] > 0
        tte = r["time_to_error_s"]
        tend = r.get("time_to_end_s", "-")
        print("| {} | {} | {}{} | {} | {} | {} | {} / {} | {} | {} |".format(
            r["fault"], r["transport"], r["outcome"],
            "" if ok else " (**expected {}**)".format(r["expect"]),
            r["ops"], "-" if tte == "-" else tte + " s",
            "-" if tend == "-" else tend + " s",
            r["error_lines"], r["warn_lines"],
            r["first_error"].replace("|", "/") or "-", r["shm_left"]))
    hangs = sum(r["outcome"] == "hang" for r in rows)
    wrong = sum(r["outcome"] == "wrong" for r in rows)
    print()
    print("{} scenarios: {} hangs, {} wrong results, {} not as expected."
          .format(len(rows), hangs, wrong, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
