"""Static analysis of a document: its diagnostics and, per node, the paths (with their types) a binding may read.
"""

from __future__ import annotations

from runtime._analysis import Analysis, PathOption, analyze
from runtime._analysis._schemas import json_type
from runtime._analysis._schemas import type_label as schema_type_label
from runtime._diagnostics import Diagnostic
from runtime._engine import retry_delay_diagnostics, step_timeout_diagnostics

__all__ = [
    "Analysis",
    "Diagnostic",
    "PathOption",
    "analyze",
    "json_type",
    "retry_delay_diagnostics",
    "schema_type_label",
    "step_timeout_diagnostics",
]
