"""Every change the editor makes to a workflow document, as named operations.

An operation is plain JSON, ``{"op": "<name>", ...arguments}``. ``apply`` runs
one on the stored document (plain JSON too) and returns the changed copy with
the operations that undo it, so undo and redo are just more operations sent the
same way. Nothing here saves or analyses: the editor's one write endpoint
(``designer.editor.edits``) applies a batch, saves it with the revision
the person was looking at and lets the analyzer judge the result. The canvas
and the side panels both send these operations; neither edits documents
itself.

The functions are pure (no database, no request), so every operation and its
undo is tested without a browser. Paths are built and printed with the
runtime's path types, never by string concatenation.

By kind: ``fields`` (names, paths, node lookup), ``edits`` (the panels' pure
edits), ``registry`` (applying operations and their undo), ``canvas``,
``generic`` (what undo sends) and ``panel`` (the operations themselves, each
module registering its own), and ``fixes`` (one-click fixes for diagnostics).
"""

from __future__ import annotations

# canvas, generic and panel register their operations in OPERATIONS as they are imported.
from designer.workflows.operations import canvas, generic, panel
from designer.workflows.operations.edits import (
    LIMIT_FIELDS,
    SCHEMA_KEYS,
    add_workflow_output,
    bind_literal,
    bind_path,
    limit_bounds,
    remove_workflow_output,
    rename_node,
    set_schema,
    unbind,
    unbind_tree,
    update_limits,
)
from designer.workflows.operations.fields import (
    BRANCH_OPS,
    OUTPUT_MODES,
    Document,
    field_key,
    find_node,
    input_target,
    literal_value,
    payload_field,
    same_target,
)
from designer.workflows.operations.fixes import fix_ops
from designer.workflows.operations.registry import (
    MAX_OPS,
    OPERATIONS,
    Applied,
    Args,
    Context,
    Op,
    apply,
    apply_all,
    names,
    restoring,
)

__all__ = [
    "BRANCH_OPS",
    "LIMIT_FIELDS",
    "MAX_OPS",
    "OPERATIONS",
    "OUTPUT_MODES",
    "SCHEMA_KEYS",
    "Applied",
    "Args",
    "Context",
    "Document",
    "Op",
    "add_workflow_output",
    "apply",
    "apply_all",
    "bind_literal",
    "bind_path",
    "canvas",
    "field_key",
    "find_node",
    "fix_ops",
    "generic",
    "input_target",
    "limit_bounds",
    "literal_value",
    "names",
    "panel",
    "payload_field",
    "remove_workflow_output",
    "rename_node",
    "restoring",
    "same_target",
    "set_schema",
    "unbind",
    "unbind_tree",
    "update_limits",
]
