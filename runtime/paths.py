"""Paths a binding reads or writes (``input.x``, ``state.y``, ``context.foreach.orders.item``): parsing and building.
"""

from __future__ import annotations

from runtime._paths import (
    GraphSourcePath,
    LocalPath,
    StatePath,
    context_path,
    input_path,
    is_item_index,
    parse_local_path,
    parse_source_path,
    parse_state_path,
    state_path,
)

__all__ = [
    "GraphSourcePath",
    "LocalPath",
    "StatePath",
    "context_path",
    "input_path",
    "is_item_index",
    "parse_local_path",
    "parse_source_path",
    "parse_state_path",
    "state_path",
]
