"""The triggers domain's answers to what the runs domain announces (``designer.runs.signals``)."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from designer.runs.signals import recovery_swept
from designer.triggers import services


@receiver(recovery_swept, dispatch_uid="designer.triggers.recovery_swept")
def requeue_lost_ticks(sender: Any, **kwargs: Any) -> None:
    """A schedule whose queued tick was lost gets it back."""
    services.requeue_lost_ticks()
