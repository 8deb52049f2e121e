from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, Max
from django.utils import timezone
from django.utils.text import slugify

from designer.access.permissions import (
    WorkflowAccess,
    require_duplicate,
    require_own_team_role,
    require_role,
    require_workflow_role,
)
from designer.core.errors import BadRequest, ObjectNotFound, RevisionConflict
from designer.core.untrusted import parse_id
from designer.models import DraftOperation, Team, Workflow, WorkflowVersion
from designer.workflows import operations
from designer.workflows.analysis import analysis_for, analyze_document, dump_document, parse_document, remember_analysis
from designer.workflows.patch import same_json
from runtime import Analysis
from runtime import Workflow as Document
from runtime.analysis import Diagnostic

_SLUG_ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class SavedDocument:
    """A stored draft and the analysis of exactly what was stored (errors do not stop a save)."""

    workflow: Workflow
    analysis: Analysis

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        return tuple(self.analysis.diagnostics)


def _team_id(team: Team | int) -> int:
    team_id = team.pk if isinstance(team, Team) else parse_id(team)
    if team_id is None:
        raise ObjectNotFound("this team does not exist or you are not a member", team=team)
    return team_id


def _clean_name(name: object, *, field: str = "name") -> str:
    if not isinstance(name, str) or not name.strip():
        raise BadRequest("a workflow needs a name", field=field)
    name = name.strip()
    if len(name) > 200:
        raise BadRequest("a workflow name has at most 200 characters", field=field)
    return _without_nul(name, field=field)


def _without_nul(text: str, *, field: str) -> str:
    # PostgreSQL text columns cannot hold NUL; the pages pass form values here without a serializer.
    if "\x00" in text:
        raise BadRequest(f"{field} may not contain NUL characters (\\x00)", field=field)
    return text


def unique_workflow_slug(team_id: int, text: str) -> str:
    base = slugify(text)[:120] or "workflow"
    taken = set(
        Workflow.objects.filter(team_id=team_id, slug__startswith=base).values_list("slug", flat=True)
    )
    slug, n = base, 1
    while slug in taken:
        n += 1
        slug = f"{base}-{n}"
    return slug


def _as_document_of(document: Document, *, slug: str) -> Document:
    """The document's id is the workflow's slug: subgraph refs and run states name it."""
    return document if document.id == slug else document.model_copy(update={"id": slug})


def _create(*, actor: Any, team_id: int, name: str, description: str, document: Document | None,
            slug_source: str) -> Workflow:
    # Two concurrent creates can pick the same free slug; the unique constraint
    # catches it and we pick again inside a savepoint.
    for attempt in range(_SLUG_ATTEMPTS):
        slug = unique_workflow_slug(team_id, slug_source)
        doc = document if document is not None else Document(id=slug, name=name, description=description)
        try:
            with transaction.atomic():
                return Workflow.objects.create(
                    team_id=team_id, slug=slug, name=name, description=description,
                    document=dump_document(_as_document_of(doc, slug=slug)), created_by=actor,
                )
        except IntegrityError:
            if attempt == _SLUG_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


@transaction.atomic
def create_workflow(*, actor: Any, team: Team | int, name: str, description: str = "",
                    document: object = None) -> Workflow:
    """A new draft in ``team`` (editor or owner). ``document`` defaults to an empty graph."""
    team_id = _team_id(team)
    require_role(actor, team_id, "editor", what="this team")
    name = _clean_name(name)
    parsed = parse_document(document) if document is not None else None
    return _create(actor=actor, team_id=team_id, name=name,
                   description=_without_nul(description or "", field="description"),
                   document=parsed, slug_source=name)


@transaction.atomic
def import_workflow(*, actor: Any, team: Team | int, document: object, name: str | None = None) -> Workflow:
    """A new draft from an exported document. The slug follows the document's id when free,
    so subgraph references between imported workflows keep working."""
    team_id = _team_id(team)
    require_role(actor, team_id, "editor", what="this team")
    parsed = parse_document(document)
    title = _clean_name(name if name is not None else (parsed.name or parsed.id))
    return _create(actor=actor, team_id=team_id, name=title, description=parsed.description,
                   document=parsed, slug_source=parsed.id)


@transaction.atomic
def duplicate_workflow(*, actor: Any, workflow: Workflow, team: Team | int | None = None,
                       name: str | None = None) -> Workflow:
    """A copy of the current draft, in the same team or another team (``permissions.DUPLICATE_RULE``)."""
    team_id = workflow.team_id if team is None else _team_id(team)
    require_own_team_role(actor, workflow, "viewer", action="duplicate it")
    require_duplicate(actor, source_team_id=workflow.team_id, target_team_id=team_id)
    title = _clean_name(name if name is not None else f"Copy of {workflow.name}")
    parsed = parse_document(workflow.document)
    return _create(actor=actor, team_id=team_id, name=title, description=workflow.description,
                   document=parsed.model_copy(update={"name": title}), slug_source=title)


@transaction.atomic
def update_workflow(*, actor: Any, workflow: Workflow, name: str | None = None,
                    description: str | None = None) -> Workflow:
    """Rename or re-describe (editor, in its team or by grant). The slug stays: documents refer to it."""
    require_workflow_role(actor, workflow, "editor")
    fields = ["updated_at"]
    if name is not None:
        workflow.name = _clean_name(name)
        fields.append("name")
    if description is not None:
        if not isinstance(description, str):
            raise BadRequest("description must be a string", field="description")
        workflow.description = _without_nul(description, field="description")
        fields.append("description")
    workflow.save(update_fields=fields)
    return workflow


@transaction.atomic
def delete_workflow(*, actor: Any, workflow: Workflow) -> None:
    """Delete a workflow with its versions and runs (editor in its team: a grant never allows deleting)."""
    require_own_team_role(actor, workflow, "editor", action="delete it")
    workflow.delete()


#: Operation-log rows kept per draft: enough for any editor that was away a while to resume, and for a publisher
#: to go back to the revision they were shown; older ones are pruned as new ones come.
LOG_KEEP = 1000


def save_document(*, actor: Any, workflow: Workflow, revision: object, document: object,
                  operations: list[Any] | None = None, undo: list[Any] | None = None,
                  client: str = "") -> SavedDocument:
    """Store a new draft if ``revision`` is still current; analysis errors do not block saving.

    Each save is logged as a ``DraftOperation`` in the same transaction, numbered by the revision it made:
    ``operations`` and ``undo`` as applied (a whole-document save logs none, and its undo is the document it
    replaced when that was the one at ``revision``), ``client`` the editor tab that sent it.

    Raises ``DocumentInvalid`` / ``DocumentTooLarge`` (nothing stored) for JSON
    that is not a document, and ``RevisionConflict`` (nothing stored) when
    someone saved in between.
    """
    require_workflow_role(actor, workflow, "editor")
    if isinstance(revision, bool) or not isinstance(revision, int):
        raise BadRequest("revision must be the integer revision the edit started from", field="revision")
    metadata_only = _metadata_only(workflow, document, revision)
    if metadata_only:
        # A move: the canvas's places changed, nothing the analysis reads (600 nodes: 0.8 s less per drag).
        assert isinstance(document, dict)
        stored, analysis = document, analysis_for(workflow)
    else:
        parsed = _as_document_of(parse_document(document), slug=workflow.slug)
        # Analyse before taking the write lock: it reads other rows and may take a while.
        analysis = analyze_document(parsed, team=workflow.team_id)
        stored = dump_document(parsed)
    with transaction.atomic():
        # A compare-and-set on revision: atomic on every database, no lock held while analysing.
        updated = Workflow.objects.filter(pk=workflow.pk, revision=revision).update(
            document=stored, revision=F("revision") + 1, updated_at=timezone.now()
        )
        if not updated:
            current = Workflow.objects.filter(pk=workflow.pk).values("revision", "document").first()
            if current is None:
                raise ObjectNotFound("the workflow was deleted meanwhile", workflow=workflow.pk)
            raise RevisionConflict(
                f"the workflow was saved by someone else (revision {current['revision']}) after "
                f"revision {revision} that you edited; reload and apply your change again",
                current_revision=current["revision"], document=current["document"],
            )
        if operations is None and undo is None and workflow.revision == revision:
            undo = [{"op": "replace_document", "document": workflow.document}]
        DraftOperation.objects.create(workflow_id=workflow.pk, revision=revision + 1, actor=actor,
                                      client=client[:64], ops=operations or [], undo=undo or [])
        if (revision + 1) % 100 == 0:
            DraftOperation.objects.filter(workflow_id=workflow.pk, revision__lte=revision + 1 - LOG_KEEP).delete()
        # Read back inside the transaction that still holds the row: after it, another save may already have
        # landed, and the caller would hold someone else's revision beside this save's analysis and undo.
        if metadata_only:
            # The stored JSON is ``stored`` itself, which shares the unchanged nodes with the draft it replaced:
            # read back only what the database set (a move of one node of 600 needs no 360 KB parse).
            workflow.refresh_from_db(fields=["revision", "updated_at"])
            workflow.document = stored
        else:
            workflow.refresh_from_db()
    remember_analysis(workflow, analysis)  # the panels that follow the save ask about this revision
    return SavedDocument(workflow=workflow, analysis=analysis)


def _metadata_only(workflow: Workflow, document: object, revision: int) -> bool:
    """True when ``document`` is the stored draft (at ``revision``) with other ``metadata`` only, a JSON object:
    then it is valid as the stored one was, and the stored draft's analysis is its analysis."""
    stored = workflow.document
    if revision != workflow.revision or not isinstance(document, dict) or not isinstance(stored, dict):
        return False
    metadata = document.get("metadata")
    if not isinstance(metadata, dict) or list(document) != list(stored):
        return False
    try:
        json.dumps(metadata, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return all(key == "metadata" or same_json(value, stored[key]) for key, value in document.items())


def document_at(workflow: Workflow, revision: int) -> dict[str, Any]:
    """The draft as it was at ``revision`` (at most the current one): the current document with the logged undo of
    every later revision applied, newest first. ``RevisionConflict`` when the log no longer reaches back there."""
    document: dict[str, Any] = workflow.document
    if revision == workflow.revision:
        return document
    later = list(DraftOperation.objects.filter(workflow_id=workflow.pk, revision__gt=revision,
                                               revision__lte=workflow.revision).order_by("-revision"))
    if revision > workflow.revision or len(later) != workflow.revision - revision or any(not e.undo for e in later):
        raise RevisionConflict(
            f"revision {revision} of the draft is no longer known (it is now at revision {workflow.revision}); "
            "look at the draft as it is and publish again", current_revision=workflow.revision)
    for entry in later:
        document = operations.apply_all(document, entry.undo).document
    return document


@transaction.atomic
def publish_workflow(*, actor: Any, workflow: Workflow, note: object = "", revision: int | None = None,
                     access: WorkflowAccess | None = None) -> WorkflowVersion:
    """Freeze the draft as the next version (editor), with the publisher's ``note`` on what changed;
    refused while it has errors (``runtime.WorkflowValidationError`` carrying every error diagnostic).

    ``revision`` is the revision the publisher was shown: when someone saved after it, that revision is published,
    not their newer edits (default: the current draft). ``access``: what the calling view read of the actor's
    access in this request; when it shows ``editor`` or above on this workflow for this actor, it is not read
    again (as ``start_run``)."""
    if access is None or not access.proves(actor, workflow, "editor"):
        require_workflow_role(actor, workflow, "editor")
    if note is None:
        note = ""
    if not isinstance(note, str) or len(note) > 2000:
        raise BadRequest("a version's note is text of at most 2000 characters", field="note")
    note = _without_nul(note.strip(), field="note")
    locked = Workflow.objects.select_for_update().get(pk=workflow.pk)
    shown = locked.document if revision is None else document_at(locked, revision)
    parsed = _as_document_of(parse_document(shown), slug=locked.slug)
    analyze_document(parsed, team=locked.team_id).raise_for_errors()
    latest = locked.versions.aggregate(latest=Max("number"))["latest"] or 0
    return WorkflowVersion.objects.create(
        workflow=locked, number=latest + 1, document=dump_document(parsed), published_by=actor, note=note
    )
