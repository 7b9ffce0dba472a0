# SPDX-License-Identifier: Apache-2.0
"""Tells ``python3 -m hccl.run`` when this rank began to exit.

A rank that fails usually makes its peers fail too: its communicators are
torn down at exit, the peers' operations end in errors, and those ranks
may be gone before it is. The launcher names the rank whose exit began
first: this writes ``exiting.<RANK_ID>`` (the wall-clock time, which
launchers on several nodes compare too) into the launcher's
OPENHCCL_RUN_DIR, once, from an atexit handler and before the world group
is torn down.
"""
import os
import time

_done = False


def mark():
    global _done
    if _done:
        return
    _done = True
    d = os.environ.get("OPENHCCL_RUN_DIR")
    rank = os.environ.get("RANK_ID")
    if not d or rank is None:
        return
    tmp = os.path.join(d, ".exiting.%s.%d" % (rank, os.getpid()))
    try:
        with open(tmp, "w") as f:
            f.write("%.6f\n" % time.time())
        os.rename(tmp, os.path.join(d, "exiting.%s" % rank))
    except OSError:
        pass
