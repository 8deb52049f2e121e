"""Diagnostics: what the analyzer reports about a workflow document."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem in a document.

    ``code`` is stable (see docs/design/runtime.md, section 7); ``node_id`` and ``field``
    locate it (``field`` is a dotted location inside the node such as
    ``input.order`` or ``over``); ``message`` says what is wrong and ``hint``
    how to fix it. ``data`` carries what a tool needs to act on it (e.g.
    ``route.no_exit``: ``{"nodes": [...]}``, the cycle); empty for most codes.
    """

    code: str
    severity: Severity
    node_id: str | None
    field: str | None
    message: str
    hint: str = ""
    data: Mapping[str, Any] = dataclasses.field(default_factory=dict, compare=False)

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "node_id": self.node_id,
            "field": self.field,
            "message": self.message,
            "hint": self.hint,
            "data": dict(self.data),
        }
