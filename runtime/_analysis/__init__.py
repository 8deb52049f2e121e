"""Static analysis of workflow documents: control regions, schemas, path options and diagnostics."""

from __future__ import annotations

from runtime._analysis._analyzer import Analysis, analyze
from runtime._analysis._codes import CODES
from runtime._analysis._options import PathOption

__all__ = ["CODES", "Analysis", "PathOption", "analyze"]
