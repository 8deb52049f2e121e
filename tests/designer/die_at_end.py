"""A worker that dies inside the transaction that stores a run's end, for the crash tests: added to a worker's
``TRELLIS_TASK_MODULES`` (which imports it) with ``TRELLIS_TEST_DIE_AT_END=1`` in its environment, it ends its
process at once when a run reaches its outcome (``run_reached`` is sent inside that transaction), as a SIGKILL
would: nothing after that point runs and nothing uncommitted is kept."""

from __future__ import annotations

import os
from typing import Any

from designer.runs.signals import run_reached
from runtime.tasks import TaskRegistry

registry = TaskRegistry()  # no tasks: the module is here for its receiver


def _die(sender: Any, **kwargs: Any) -> None:
    if os.environ.get("TRELLIS_TEST_DIE_AT_END") == "1":
        os._exit(9)


run_reached.connect(_die, dispatch_uid="tests.designer.die_at_end")
