"""Running workflows in the background: leases, the ORM checkpointer, the executor a task calls, and recovery.

A run is executed by whichever worker holds its *lease* (``Run.lease_owner`` /
``Run.lease_expires_at``). Claiming is one conditional UPDATE, so two workers
can never both execute a run; a worker renews its lease at every checkpoint
and from a heartbeat thread while a long step runs. A worker that dies stops
renewing; once the lease has expired, ``recovery.requeue_stale_runs`` enqueues
the run again and the next worker continues from the last checkpoint. That
recovery is itself a self-renewing task (``sweep``), so every worker process
runs it, whatever command started it. The task queue is reached through
``queue`` on ``django.tasks``' public API; ``task_backend`` holds the two
things that API does not offer.
"""

from __future__ import annotations
