"""Running workflows in the background: leases, the ORM checkpointer, the executor a task calls, and recovery.

A run is executed by whichever worker holds its *lease* (``Run.lease_owner`` /
``Run.lease_expires_at``). Claiming is one conditional UPDATE, so two workers
can never both execute a run; a worker renews its lease at every checkpoint
and from a heartbeat thread while a long step runs. A worker that dies stops
renewing; once the lease has expired, ``recovery.requeue_stale_runs`` enqueues
the run again and the next worker continues from the last checkpoint.
"""

from __future__ import annotations
