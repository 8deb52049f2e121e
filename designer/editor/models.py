"""Live co-editing: who has a draft open (the draft's operation log is the workflows domain's ``DraftOperation``)."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models

from designer.access.models import TeamScoped


class EditorPresence(TeamScoped):
    """One open editor tab: who, on which draft, with which node selected, last heard from when."""

    team_lookup: ClassVar[str] = "workflow__team"

    workflow = models.ForeignKey("designer.Workflow", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    client = models.CharField(max_length=64)
    node = models.CharField(max_length=200, blank=True, default="")
    seen_at = models.DateTimeField()
    #: When this tab joined or changed its selection: the feed wakes waiters on it, not on every heartbeat.
    changed_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=("workflow", "client"), name="presence_unique_client")]
        indexes = [models.Index(fields=("workflow", "seen_at"), name="presence_workflow_seen")]

    def __str__(self) -> str:
        return f"{self.user_id} on workflow {self.workflow_id}"
