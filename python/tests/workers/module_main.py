# SPDX-License-Identifier: Apache-2.0
"""Run with python3 -m hccl.run -m (the tests add workers/ to the path)."""
import os
import sys

with open(os.path.join(sys.argv[1], "mod.%s" % os.environ["RANK_ID"]),
          "w") as f:
    f.write(__name__)
