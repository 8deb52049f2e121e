"""The payload a node's ``error`` route carries, as the analyzer types it.

When a node fails for good and has an ``error`` route, the engine
(``runtime._algo.Failure.error_payload``) commits ``{"error": {...}}`` as the
node's result: its output bindings are applied to it exactly as to a normal
result (a source path the payload lacks is skipped, no write). This schema is
the one description of that payload; ``tests/runtime/test_analysis_errors.py``
runs the real engine and validates the payloads it produces against it, with
``additionalProperties: false`` so that a field the engine adds fails the test
until it is described here.
"""

from __future__ import annotations

from typing import Final

from runtime._analysis._schemas import Schema

_ID: Final[Schema] = {"type": "string"}

ERROR_SCHEMA: Final[Schema] = {
    "type": "object",
    "title": "Error",
    "description": "Why the node failed (the error route's payload)",
    "properties": {
        "type": {"type": "string", "title": "Error type",
                 "description": "Exception class name, e.g. TaskError or NodeFailedError"},
        "message": {"type": "string", "title": "Message", "description": "The error message"},
        "node_id": {**_ID, "title": "Node id", "description": "The node that failed"},
        "frame_id": {**_ID, "title": "Frame id", "description": "The frame that failed"},
        "scope_id": {**_ID, "title": "Scope id", "description": "The workflow invocation it failed in"},
        "lineage_id": {**_ID, "title": "Lineage id", "description": "The line of work that failed"},
        "attempts": {"type": "integer", "minimum": 1, "title": "Attempts",
                     "description": "How many times the node ran (retries included)"},
        "code": {"type": "string", "title": "Code",
                 "description": "Stable error code, when the error is a WorkflowError (e.g. task.failed)"},
        "index": {"type": "integer", "minimum": 0, "title": "Item index",
                  "description": "Index of the foreach item, when the node runs in a foreach body"},
        "activation_id": {**_ID, "title": "Activation id",
                          "description": "The foreach run the item belongs to, when in a foreach body"},
        "via": {"type": "array", "items": {"type": "string"}, "title": "Via",
                "description": "Subgraph nodes the failure passed through, outermost first"},
    },
    "required": ["type", "message", "node_id", "frame_id", "scope_id", "lineage_id", "attempts"],
    "additionalProperties": False,
}

#: A node's result on its ``error`` route.
ERROR_PAYLOAD_SCHEMA: Final[Schema] = {
    "type": "object",
    "title": "Error payload",
    "properties": {"error": ERROR_SCHEMA},
    "required": ["error"],
    "additionalProperties": False,
}
