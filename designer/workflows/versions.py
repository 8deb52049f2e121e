"""Restoring a published version into the draft, through the editor's one write path.

The restore is an edit like any other: the ``replace_document`` operation
(``designer.workflows.operations``) applied to the stored draft and saved against the revision the
person was looking at. A stale revision is refused (``RevisionConflict``) and the draft keeps
its revision; the operation's undo puts the draft back as it was, through the same path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from designer.access.permissions import require_workflow_role
from designer.models import Workflow
from designer.workflows import operations as ops
from designer.workflows.selectors import get_version
from designer.workflows.services import SavedDocument, save_document


@dataclass(frozen=True, slots=True)
class Edited:
    saved: SavedDocument
    undo: list[dict[str, Any]]


def apply_edits(*, actor: Any, workflow: Workflow, revision: object, operations: object) -> Edited:
    """Apply edit operations to the stored draft and save them if ``revision`` is current (editor)."""
    require_workflow_role(actor, workflow, "editor")
    applied = ops.apply_all(workflow.document, operations)
    saved = save_document(actor=actor, workflow=workflow, revision=revision, document=applied.document)
    return Edited(saved=saved, undo=applied.undo)


def restore_version(*, actor: Any, workflow: Workflow, number: object, revision: object) -> Edited:
    """Make version ``number``'s document the draft (editor). Its canvas positions come along with it."""
    require_workflow_role(actor, workflow, "editor")
    version = get_version(workflow=workflow, number=number)
    return apply_edits(actor=actor, workflow=workflow, revision=revision,
                       operations=[{"op": "replace_document", "document": version.document}])
