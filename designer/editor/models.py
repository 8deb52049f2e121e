"""Live co-editing's tables: the draft's operation log and who has the draft open."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models

from designer.fields import ExactJSONField


class DraftOperation(models.Model):
    """One saved change of a draft, numbered by the revision it produced: the truth every editor follows.

    Written in the transaction that stores the draft (``workflows.services.save_document``), so a revision
    exists exactly when its row does. ``ops`` are the named operations as applied, in server order (empty: a
    whole-document save, e.g. through the API); ``undo`` turns the revision back into the one before (empty when
    it is not known), which is how a publisher gets the revision they were shown.
    """

    team_lookup: ClassVar[str] = "workflow__team"

    workflow = models.ForeignKey("designer.Workflow", on_delete=models.CASCADE, related_name="+")
    revision = models.PositiveIntegerField()
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+")
    #: The browser tab that sent it, so that tab does not apply its own change twice.
    client = models.CharField(max_length=64, blank=True, default="")
    ops = ExactJSONField(default=list)
    undo = ExactJSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=("workflow", "revision"), name="draftop_unique_revision")]
        ordering = ("workflow_id", "revision")

    def __str__(self) -> str:
        return f"workflow {self.workflow_id} revision {self.revision}"


class EditorPresence(models.Model):
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
