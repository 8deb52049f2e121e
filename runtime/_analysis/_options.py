"""Path options: what the designer's path pickers offer at one node."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from runtime._paths import GraphSourcePath

Compatibility = Literal["exact", "compatible", "optional"]


@dataclass(frozen=True, slots=True)
class PathOption:
    """One readable path at a node.

    ``compatibility`` is set when options were asked for with a ``want``
    schema: ``exact`` (same type), ``compatible`` (fits, e.g. integer into
    number, or an unknown schema), ``optional`` (may not fit at run time, e.g.
    a nullable value into a non-nullable field: a warning if bound).
    ``schema`` is shared with the analysis; treat it as read-only.
    """

    path: GraphSourcePath
    path_str: str
    schema: dict[str, Any]
    type: str
    title: str
    description: str
    group: str
    foreach_id: str | None = None
    compatibility: Compatibility | None = None
