"""Tasks for command-line and crash tests; imported by a subprocess as ``--tasks tests.runtime.cli_tasks``."""

from __future__ import annotations

import time

from runtime.tasks import TaskRegistry

registry = TaskRegistry()


@registry.task
def slow_double(x: int, delay: float = 0.0) -> int:
    time.sleep(delay)
    return 2 * x


@registry.task
def total(values: list[int]) -> int:
    return sum(values)


@registry.task
def explode() -> int:
    raise RuntimeError("kaboom")
