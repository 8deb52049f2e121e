"""The notifications domain's answers to what the runs domain announces (``designer.runs.signals``)."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from designer.notifications import services
from designer.runs.signals import run_reached


@receiver(run_reached, dispatch_uid="designer.notifications.run_reached")
def queue_notifications(sender: Any, *, run_id: int, status: str, **kwargs: Any) -> None:
    services.run_reached(run_id=run_id, status=status, team_id=kwargs.get("team_id"),
                         workflow_id=kwargs.get("workflow_id"))
