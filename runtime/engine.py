"""Running documents: the engine, its results and budgets, how it calls steps and finds subgraphs, and the
distributed foreach a host spreads over workers.
"""

from __future__ import annotations

from runtime._batches import BatchResult, DistributedForeach, ItemOutcome, distributed_foreach
from runtime._budget import RunBudget
from runtime._compile_cache import CompileCache
from runtime._engine import Engine, RunResult
from runtime._options import EngineOptions
from runtime._resolver import MappingResolver, WorkflowResolver
from runtime._steps import StepCall, StepExecutor

__all__ = [
    "BatchResult",
    "CompileCache",
    "DistributedForeach",
    "Engine",
    "EngineOptions",
    "ItemOutcome",
    "MappingResolver",
    "RunBudget",
    "RunResult",
    "StepCall",
    "StepExecutor",
    "WorkflowResolver",
    "distributed_foreach",
]
