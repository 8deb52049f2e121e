"""The analyzer's diagnostic codes: one table, so docs, tests and the designer agree.

Codes from docs/design/runtime.md section 7 are stable; the ones marked ``addition`` are
the analyzer's own extensions (documented in the same table). ``severity`` is
the usual severity; ``binding.type_mismatch`` and ``path.unknown_field`` are
also emitted as warnings when a value only *may* not fit (a nullable source
into a non-nullable field, a binding to a field the target does not declare).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from runtime._diagnostics import Severity


@dataclass(frozen=True, slots=True)
class CodeInfo:
    code: str
    severity: Severity
    when: str
    addition: bool = False


_TABLE: Final[tuple[CodeInfo, ...]] = (
    CodeInfo("path.unknown_foreach", "error", "a path names a foreach id that does not exist in this workflow"),
    CodeInfo("path.inactive_foreach", "error", "the foreach exists but is not active at the consuming node"),
    CodeInfo("path.unknown_context_field", "error",
             "a context field that does not exist (a ForeachContext field, or loop_item/an alias with no "
             "active foreach)"),
    CodeInfo("path.cross_scope", "error", "a child workflow addresses a caller's foreach"),
    CodeInfo("path.unknown_field", "error", "an input, state or result field that the schemas do not declare"),
    CodeInfo("alias.collision", "error", "active aliases collide with each other or with reserved context fields"),
    CodeInfo("node.unreachable", "error", "not reachable from start"),
    CodeInfo("region.ambiguous", "error", "a node reached under two different owner stacks"),
    CodeInfo("region.escape", "error", "a route leaves a foreach body other than by its back-edge"),
    CodeInfo("region.no_return", "error", "a body lineage can end without returning to its foreach"),
    CodeInfo("route.unknown_label", "error", "a route uses a label the node cannot emit"),
    CodeInfo("route.unknown_target", "error", "a route points at a node that does not exist"),
    CodeInfo("binding.missing_required", "error", "a required input field has no binding"),
    CodeInfo("binding.type_mismatch", "error",
             "a bound path's schema cannot satisfy the target field (also: a branch case value the branch path "
             "never equals or cannot be compared with, field cases.<i>.value)"),
    CodeInfo("subgraph.unknown_workflow", "error", "a subgraph reference that the resolver cannot find"),
    CodeInfo("subgraph.recursion", "error", "subgraph references form a cycle"),
    CodeInfo("route.no_exit", "error",
             "a route cycle that nothing leaves: no route out, no unrouted label (a foreach's done), no interrupt "
             "(node is the cycle's first node, data.nodes lists them all)", addition=True),
    CodeInfo("task.unknown", "error", "a task node names a task the registry does not hold", addition=True),
    CodeInfo("route.unknown_source", "error", "a route starts at a node that does not exist", addition=True),
    CodeInfo("workflow.no_start", "error", "the workflow has no nodes, or its start node does not exist",
             addition=True),
    CodeInfo("schema.invalid", "error",
             "input_schema, state_schema or an interrupt's resume_schema cannot be used: not valid JSON Schema, "
             "a $ref that leaves the schema, points at nothing or loops, a pattern that is no regular "
             "expression or too large, a schema too complex to validate (more than MAX_SCHEMA_SUBSCHEMAS, "
             "10,000, subschemas once every $ref is expanded, or recursion that checks a nested value more "
             "than once per level), or a default its own schema refuses (field names the schema; the message "
             "gives the place inside it)",
             addition=True),
    CodeInfo("foreach.batch_interrupt", "error",
             "an interrupt inside the body of a foreach that may run as distributed batches (batch_size set)",
             addition=True),
    CodeInfo("foreach.batch_state_write", "warning",
             "a node writes state inside the body of a foreach that may run as distributed batches: the writes "
             "stay in their batch", addition=True),
    CodeInfo("foreach.batch_settings_unused", "warning",
             "max_batches_in_flight set on a foreach without batch_size", addition=True),
    CodeInfo("state.concurrent_write", "warning",
             "a set output, or an inner foreach's results, writes a state field inside the body of a foreach "
             "that runs items concurrently (max_concurrency > 1): each item overwrites it and the last to finish "
             "wins (data: target, concurrent_foreach, inner_foreach)", addition=True),
    CodeInfo("document.invalid", "error",
             "analyze() was given a mapping that is not a valid workflow document (raised, not returned)",
             addition=True),
)

CODES: Final[dict[str, CodeInfo]] = {info.code: info for info in _TABLE}
