"""Where runs are kept between steps: the one ``Checkpointer`` protocol and the stores that implement it.
"""

from __future__ import annotations

from runtime._checkpoint import (
    AsyncCheckpointer,
    Checkpointer,
    CheckpointInfo,
    FileCheckpointer,
    HistoryPolicy,
    InMemoryCheckpointer,
)
from runtime._parts import CheckpointDelta, PartLedger
from runtime._sqlite import SqliteCheckpointer

__all__ = [
    "AsyncCheckpointer",
    "CheckpointDelta",
    "CheckpointInfo",
    "Checkpointer",
    "FileCheckpointer",
    "HistoryPolicy",
    "InMemoryCheckpointer",
    "PartLedger",
    "SqliteCheckpointer",
]
