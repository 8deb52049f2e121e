"""Subgraph references, resolved against a team's published versions.

A ``WorkflowRef`` in a document names a workflow of the same team by its
*slug* (stable, human-readable, survives export/import into another team that
has the same child) and optionally a version number; no version means the
latest published one. ``<team slug>/<workflow slug>`` names another team's
workflow, and resolves only while that workflow is granted to this team as
runner or editor (``WorkflowGrant``): checked when a run starts (which pins the
version) and again whenever the run is resumed, so a revoked grant stops it.
Only published versions resolve: drafts change under you, versions never do.
Runs reuse this resolver, so what the editor validates against is what runs.
"""

from __future__ import annotations

from django.db.models import QuerySet

from designer.models import Team, WorkflowGrant, WorkflowVersion
from runtime import Workflow
from runtime.document import WorkflowRef
from runtime.errors import SubgraphResolutionError


class TeamVersionResolver:
    """A runtime ``WorkflowResolver`` over one team's ``WorkflowVersion`` rows.

    Results are cached per instance (versions are immutable, and "latest" is
    pinned for the instance's lifetime so one analysis or run sees one answer).
    """

    def __init__(self, team: Team | int) -> None:
        self.team_id = team.pk if isinstance(team, Team) else int(team)
        self._versions: dict[tuple[str, int | None], WorkflowVersion] = {}
        self._documents: dict[int, Workflow] = {}

    def version_for(self, ref: WorkflowRef) -> WorkflowVersion:
        """The ``WorkflowVersion`` row ``ref`` means; raises ``SubgraphResolutionError``."""
        key = (ref.id, ref.version)
        cached = self._versions.get(key)
        if cached is not None:
            return cached
        rows = self._candidates(ref.id)
        if ref.version is not None:
            rows = rows.filter(number=ref.version)
        version = rows.order_by("-number").first()
        if version is None:
            shown = ref.id if ref.version is None else f"{ref.id} v{ref.version}"
            where = ("shared with this team to run (its owners grant your team runner or editor access on its "
                     "sharing page)" if "/" in ref.id else "in this team")
            raise SubgraphResolutionError(
                f"no published workflow {shown!r} {where}; publish it first, or check the slug",
                workflow=ref.id, version=ref.version,
            )
        self._versions[key] = version
        return version

    def _candidates(self, ref_id: str) -> QuerySet[WorkflowVersion]:
        team_slug, _, slug = ref_id.rpartition("/")
        if not team_slug:
            return WorkflowVersion.objects.filter(workflow__team_id=self.team_id, workflow__slug=slug)
        own = WorkflowVersion.objects.filter(workflow__team_id=self.team_id, workflow__team__slug=team_slug,
                                             workflow__slug=slug)
        shared = WorkflowVersion.objects.filter(
            workflow__team__slug=team_slug, workflow__slug=slug, workflow__grants__team_id=self.team_id,
            workflow__grants__role__in=(WorkflowGrant.Role.RUNNER, WorkflowGrant.Role.EDITOR),
        )
        return own | shared

    def resolve(self, ref: WorkflowRef) -> Workflow:
        version = self.version_for(ref)
        document = self._documents.get(version.pk)
        if document is None:
            document = Workflow.model_validate(version.document)
            self._documents[version.pk] = document
        return document
