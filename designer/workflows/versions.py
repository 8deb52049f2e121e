"""Restoring a published version into the draft, through the editor's one write path.

The restore is an edit like any other, through the one edit service (``designer.workflows.edits``): the
``replace_document`` operation applied to the stored draft and saved against the revision the person was
looking at. A stale revision is refused (``RevisionConflict``) and the draft keeps
its revision; the operation's undo puts the draft back as it was, through the same path.
"""

from __future__ import annotations

from typing import Any

from designer.access.permissions import require_workflow_role
from designer.models import Workflow
from designer.workflows.edits import Edited, apply_edits
from designer.workflows.selectors import get_version


def restore_version(*, actor: Any, workflow: Workflow, number: object, revision: object) -> Edited:
    """Make version ``number``'s document the draft (editor). Its canvas positions come along with it."""
    require_workflow_role(actor, workflow, "editor")
    version = get_version(workflow=workflow, number=number)
    return apply_edits(actor=actor, workflow=workflow, revision=revision,
                       operations=[{"op": "replace_document", "document": version.document}])
