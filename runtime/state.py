"""A run's whole durable state (``RunState``, the protocol boundary) and the values it is made of.
"""

from __future__ import annotations

from runtime._context import ForeachContext, RuntimeContext
from runtime._ids import IdFactory, RandomIds, SequentialIds
from runtime._state import (
    Barrier,
    ExecutionFrame,
    ForeachActivation,
    Interrupt,
    Lineage,
    RunState,
    RuntimeScope,
    Wakeup,
    parse_run_state,
)
from runtime._trace import TraceEvent

__all__ = [
    "Barrier",
    "ExecutionFrame",
    "ForeachActivation",
    "ForeachContext",
    "IdFactory",
    "Interrupt",
    "Lineage",
    "RandomIds",
    "RunState",
    "RuntimeContext",
    "RuntimeScope",
    "SequentialIds",
    "TraceEvent",
    "Wakeup",
    "parse_run_state",
]
