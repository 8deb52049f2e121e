"""The worker's heartbeat: ``run_worker`` writes its ``WorkerHeartbeat`` row when it starts and renews
``last_seen`` on a ``PeriodicThread`` while it works; it deletes the row when it stops."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.db import close_old_connections
from django.utils import timezone

from designer.conf import trellis
from designer.core.periodic import PeriodicThread
from designer.monitoring.models import WorkerHeartbeat

#: A row not seen for this long belongs to a worker that was killed: the next worker to start deletes it.
FORGET_AFTER = timedelta(days=1)


def interval() -> float:
    """Seconds between beats: a third of the window ``/readyz`` looks back over, at most 10 and at least 0.2."""
    window = trellis.WORKER_SEEN_SECONDS or 30.0
    return max(0.2, min(10.0, window / 3))


class Heartbeat(PeriodicThread):
    """Renews one worker's ``last_seen`` every ``interval()`` seconds (the row comes back if it was deleted)."""

    failure = "worker process %s: the heartbeat failed; retrying"

    def __init__(self, worker_id: str) -> None:
        super().__init__(f"worker-heartbeat-{worker_id}")
        self.worker_id = worker_id
        self.run_id = os.getpid()
        self.interval = interval()
        self.started_at = timezone.now()

    def beat(self) -> None:
        WorkerHeartbeat.objects.update_or_create(
            worker_id=self.worker_id,
            defaults={"last_seen": timezone.now()},
            create_defaults={"host": socket.gethostname()[:255], "pid": os.getpid(), "started_at": self.started_at,
                             "last_seen": timezone.now()},
        )

    def tick(self) -> bool:
        self.beat()
        return False


@contextmanager
def beating(worker_id: str) -> Iterator[Heartbeat]:
    """While the block runs, ``worker_id``'s heartbeat row is there and fresh; it is deleted after."""
    WorkerHeartbeat.objects.filter(last_seen__lt=timezone.now() - FORGET_AFTER).delete()
    heartbeat = Heartbeat(worker_id)
    heartbeat.beat()  # seen at once, not an interval later
    try:
        with heartbeat:
            yield heartbeat
    finally:
        close_old_connections()
        WorkerHeartbeat.objects.filter(worker_id=worker_id).delete()
