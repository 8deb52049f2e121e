"""``schema.invalid``: the document's own JSON Schemas, checked when it is saved rather than when a run starts.

The runtime refuses to validate against a schema with defects (``runtime._schema_check``); reporting
them here puts the problem next to the field that holds the schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtime._diagnostics import Diagnostic
from runtime._document import InterruptNode, Workflow
from runtime._schema_check import schema_defects


def schema_diagnostics(doc: Workflow) -> list[Diagnostic]:
    out = _diagnose(None, "input_schema", "the workflow's input_schema", doc.input_schema)
    out += _diagnose(None, "state_schema", "the workflow's state_schema", doc.state_schema)
    for node in doc.nodes:
        if isinstance(node, InterruptNode):
            out += _diagnose(node.id, "resume_schema", f"the resume_schema of interrupt {node.id!r}",
                             node.resume_schema)
    return out


def _diagnose(node_id: str | None, field: str, what: str, schema: Mapping[str, Any]) -> list[Diagnostic]:
    return [
        Diagnostic("schema.invalid", "error", node_id, field,
                   f"{what} is not a usable JSON Schema: {defect.message} (at {defect.where})", defect.hint)
        for defect in schema_defects(schema)
    ]
