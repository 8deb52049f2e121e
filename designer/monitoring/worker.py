"""What ``run_worker`` does for the operator while it works: its heartbeat row (``/readyz``, ``/metrics``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from designer.monitoring.heartbeat import beating


@contextmanager
def watched(worker_id: str) -> Iterator[None]:
    """While the block runs the worker's heartbeat is kept fresh."""
    with beating(worker_id):
        yield
