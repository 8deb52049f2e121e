"""The workflows domain's rows: a workflow's editable draft, the log of its saved operations (what live
co-editing follows) and its published, immutable versions."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.db import models

from designer.access.models import Team, TeamScoped
from designer.core.fields import ExactJSONField


def empty_document() -> dict[str, Any]:
    """A workflow row's document before any save: nothing (the services always store a whole document)."""
    return {}


class Workflow(TeamScoped):
    """The editable draft. ``revision`` guards concurrent edits of ``document``."""

    workflow_lookup: ClassVar[str] = "pk"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="workflows")
    slug = models.SlugField(max_length=140)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    document = ExactJSONField(default=empty_document)
    revision = models.PositiveIntegerField(default=1)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("team_id", "name", "pk")
        constraints = [
            models.UniqueConstraint(fields=("team", "slug"), name="workflow_unique_team_slug"),
        ]
        indexes = [models.Index(fields=("team", "updated_at"), name="workflow_team_updated")]

    def __str__(self) -> str:
        return self.name


class WorkflowScoped(TeamScoped):
    """A row that belongs to one workflow (its ``workflow`` field): seen by the workflow's team and the teams
    it is granted to."""

    team_lookup: ClassVar[str] = "workflow__team"
    workflow_lookup: ClassVar[str | None] = "workflow"

    class Meta:
        abstract = True


class WorkflowVersion(WorkflowScoped):
    """A published, immutable copy of a workflow's document.

    Subgraph nodes and runs refer to versions, so nothing ever updates a row
    once written; ``save`` refuses to, to make a mistake loud.
    """

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    document = ExactJSONField()
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    published_at = models.DateTimeField(auto_now_add=True)
    note = models.TextField(blank=True, default="", help_text="what changed, in the publisher's words")

    class Meta:
        ordering = ("workflow_id", "-number")
        constraints = [
            models.UniqueConstraint(fields=("workflow", "number"), name="version_unique_workflow_number"),
        ]

    def __str__(self) -> str:
        return f"{self.workflow} v{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None and not self._state.adding:
            raise ValueError("a published WorkflowVersion is immutable")
        super().save(*args, **kwargs)


class DraftOperation(TeamScoped):
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
