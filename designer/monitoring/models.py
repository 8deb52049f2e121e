"""The workers' heartbeat: one row per ``run_worker`` process, its ``last_seen`` renewed every few seconds."""

from __future__ import annotations

from django.db import models


class WorkerHeartbeat(models.Model):
    """A ``run_worker`` process as it last said it was alive (``designer.monitoring.heartbeat``).

    ``/readyz`` asks for a row seen within ``TRELLIS_WORKER_SEEN_SECONDS``; ``/metrics`` counts them. A worker
    that stops cleanly deletes its row; a killed one's row ages and is deleted by the next worker that starts
    once it is a day old.
    """

    worker_id = models.CharField(max_length=200, unique=True)
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    last_seen = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"worker {self.worker_id} on {self.host} (pid {self.pid}), last seen {self.last_seen}"
