"""The one way a draft changes: named edit operations applied to the stored draft and saved.

The editor's canvas and panels (``designer.editor.edits``), a restore of a published version and its undo
(``designer.workflows.versions``) all call ``apply_edits``. It applies the operations
(``designer.workflows.operations``) to the stored draft and saves the result with ``save_document``, whose
compare-and-set on the revision and log row (``DraftOperation``) are one transaction; the analysis runs before
it, outside the write lock.

An edit made on an older revision is *rebased* (``rebase=True``, the editor): applied to the current draft in
server order when nothing saved since touches what it touches (``designer.workflows.merge``; the sending tab's
own changes never count against it), else refused with ``EditConflict`` naming what was kept and by whom. When
yet another save lands between the read and the write, the edit is judged again on the newer draft. Without
rebasing (a restore), a stale revision is refused with ``RevisionConflict``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from designer.access.people import display_name
from designer.access.permissions import require_workflow_role
from designer.core.errors import EditConflict, RevisionConflict
from designer.models import DraftOperation, Workflow
from designer.workflows import merge, services
from designer.workflows import operations as ops
from designer.workflows.analysis import analysis_for
from runtime import Analysis

#: What the operations may ask of the analyzer on the draft they apply to (a node's exit labels, a field's
#: schema): made by the caller, which knows the panels' rules; None for operations that ask nothing.
ContextFor = Callable[[Workflow, Analysis], ops.Context]

#: Times an edit is rebased again when yet another save lands between its rebase and its own save. Each retry
#: means someone else's save went in, so the loop ends once the writers ahead of it have saved: this only bounds a
#: pathological stream (five was too few: six people saving one revision at once could see one refused).
REBASE_ATTEMPTS = 50


@dataclass(frozen=True, slots=True)
class Edited:
    """A saved edit, with the draft its operations were applied to: ``base_revision`` (the saved revision less
    one: the save is a compare-and-set on it), its ``base_document`` and ``base_analysis``. When the edit was
    rebased or judged again that is not the revision it was sent with, nor the draft first read."""

    saved: services.SavedDocument
    applied: ops.Applied
    base_revision: int
    base_document: dict[str, Any]
    base_analysis: Analysis | None  # when the caller gave it or the operations asked the analyzer

    @property
    def undo(self) -> list[dict[str, Any]]:
        return self.applied.undo


def _later(workflow: Workflow, revision: int, client: str) -> list[merge.Later] | None:
    """Other tabs' edits saved after ``revision``, in server order; None when the log does not reach back there."""
    # Up to the revision this rebase is judged on: rows saved since are judged by the retry that meets them.
    rows = list(DraftOperation.objects.filter(workflow_id=workflow.pk, revision__gt=revision,
                                              revision__lte=workflow.revision)
                .select_related("actor").order_by("revision"))
    if len(rows) != workflow.revision - revision:
        return None
    return [merge.Later(row.revision, display_name(row.actor), row.ops) for row in rows
            if not (client and row.client == client)]


def _rebase(workflow: Workflow, revision: object, operations: object, client: str) -> object:
    """The revision to save ``operations`` on: ``revision`` itself when current; else the current one, when the
    edits saved since touched nothing these do (``merge``); else ``EditConflict``, keeping the first."""
    if isinstance(revision, bool) or not isinstance(revision, int) or not 0 < revision < workflow.revision:
        return revision  # current, or nonsense that save_document names
    later = _later(workflow, revision, client)
    sent = [op for op in operations if isinstance(op, Mapping)] if isinstance(operations, list) else []
    kept = ([merge.Kept(workflow.revision, "someone", merge.EVERYTHING)] if later is None
            else merge.conflicts(sent, later))
    if kept:
        first = kept[0]
        raise EditConflict(
            f"{first.actor} changed {first.describe()} first (revision {first.revision}); their change is kept "
            "and yours was not applied",
            kept=[k.to_dict() for k in kept], ops=operations, current_revision=workflow.revision,
        )
    return workflow.revision


def apply_edits(*, actor: Any, workflow: Workflow, revision: object, operations: object, client: str = "",
                rebase: bool = False, analysis: Analysis | None = None,
                context: ContextFor | None = None) -> Edited:
    """Apply ``operations`` to the stored draft of ``workflow`` (editor) and save them as one revision.

    ``revision`` is the revision the edit was made on; ``client`` the editor tab that sent it (its own logged
    changes never conflict with it); ``rebase`` lets an edit on an older revision apply to the current draft
    (see the module's doc); ``analysis`` is the stored draft's when the caller has it; ``context`` makes what
    the operations ask of the analyzer. Raises ``EditConflict``, ``RevisionConflict``, ``BadRequest`` for
    operations that are not edits, ``DocumentInvalid`` for a result that is not a document; nothing is stored
    then.
    """
    require_workflow_role(actor, workflow, "editor")
    if analysis is None and context is not None:
        analysis = analysis_for(workflow)
    logged = list(operations) if isinstance(operations, list) else None
    for attempt in range(REBASE_ATTEMPTS):
        base = _rebase(workflow, revision, operations, client) if rebase else revision
        before = workflow.document  # the save re-reads ``workflow``: this stays the base revision's
        asks = context(workflow, analysis) if context is not None and analysis is not None else None
        applied = ops.apply_all(before, operations, asks)
        try:
            saved = services.save_document(actor=actor, workflow=workflow, revision=base,
                                           document=applied.document, operations=logged, undo=applied.undo,
                                           client=client)
        except RevisionConflict:
            # Saved by someone else between our read and our write: read again, judge again.
            fresh = Workflow.objects.filter(pk=workflow.pk).first()
            if not rebase or fresh is None or attempt == REBASE_ATTEMPTS - 1 or not isinstance(base, int) \
                    or not 0 < base < fresh.revision:
                raise
            workflow, analysis = fresh, (analysis_for(fresh) if context is not None else None)
            continue
        assert isinstance(base, int)  # save_document refuses anything else
        return Edited(saved, applied, base_revision=base, base_document=before, base_analysis=analysis)
    raise AssertionError("unreachable")
