# SPDX-License-Identifier: Apache-2.0
"""hccl.manage: group management (``hccl.manage.api``)."""
from . import api  # noqa: F401
