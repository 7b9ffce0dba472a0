# SPDX-License-Identifier: Apache-2.0
"""hccl.split: gradient split strategies (``hccl.split.api``)."""
from . import api  # noqa: F401
