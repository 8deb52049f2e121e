"""What the runs domain announces to the domains built on it.

Notifications and triggers import the runs domain (they queue work, they start runs), so runs must not import
them back; the executor and the sweeps send these signals instead, and ``designer.notifications.receivers`` and
``designer.triggers.receivers`` (connected when the app is ready) act on them.

``run_reached`` (``run_id``, ``status``, and the run's ``team_id`` and ``workflow_id`` when the sender has them):
a run was stored with a status a person may want to hear of. Sent inside the transaction that stores it, so what
a receiver writes commits or rolls back with the status.

``recovery_swept``: a recovery sweep (a link of the queued chain, or ``run_worker``'s sweep thread) has
re-enqueued orphaned runs; receivers recover their own lost work the same way.
"""

from __future__ import annotations

from django.dispatch import Signal

run_reached = Signal()
recovery_swept = Signal()
