"""Trellis runtime: workflow documents, validation and execution, free of any web framework.

The names in ``__all__`` are the public surface; everything in underscore
modules is internal and may change.
"""

from __future__ import annotations

from runtime._analysis import Analysis, PathOption, analyze
from runtime._analysis._schemas import json_type
from runtime._analysis._schemas import type_label as schema_type_label
from runtime._batches import BatchResult, DistributedForeach, ItemOutcome, distributed_foreach
from runtime._builder import WorkflowBuilder
from runtime._checkpoint import Checkpointer, FileCheckpointer, InMemoryCheckpointer
from runtime._context import ForeachContext, RuntimeContext
from runtime._diagnostics import Diagnostic
from runtime._document import (
    BranchCase,
    BranchNode,
    ForeachNode,
    InputBinding,
    InterruptNode,
    OutputBinding,
    RetryPolicy,
    SubgraphNode,
    TaskNode,
    Workflow,
    WorkflowOutput,
    WorkflowRef,
    WorkflowRoute,
)
from runtime._engine import Engine, RunResult
from runtime._errors import (
    BindingError,
    CheckpointNotFoundError,
    CorruptRunStateError,
    ForeachItemsFailedError,
    InputValidationError,
    NodeFailedError,
    PathSyntaxError,
    ResumeError,
    StepCancelledError,
    StepLimitError,
    StepMemoryError,
    StepResultTooLargeError,
    StepTimeoutError,
    SubgraphDepthError,
    SubgraphResolutionError,
    TaskError,
    TaskRegistrationError,
    TaskResultError,
    UnknownNodeError,
    UnknownTaskError,
    UnreachableNodeError,
    WorkflowBuildError,
    WorkflowError,
    WorkflowValidationError,
)
from runtime._ids import IdFactory, RandomIds, SequentialIds
from runtime._inspect import ActivationProgress, activation_progress, check_resume, check_run_input, frame_context
from runtime._parts import CheckpointDelta, PartLedger
from runtime._paths import (
    GraphSourcePath,
    LocalPath,
    StatePath,
    context_path,
    input_path,
    parse_local_path,
    parse_source_path,
    parse_state_path,
    state_path,
)
from runtime._registry import Route, TaskRegistry, TaskSpec, builtin_registry, default_registry, task
from runtime._resolver import MappingResolver, WorkflowResolver
from runtime._sqlite import SqliteCheckpointer
from runtime._state import (
    Barrier,
    ExecutionFrame,
    ForeachActivation,
    Interrupt,
    Lineage,
    RunState,
    RuntimeScope,
)
from runtime._steps import StepCall, StepExecutor
from runtime._trace import TraceEvent

__all__ = [
    "ActivationProgress",
    "Analysis",
    "Barrier",
    "BatchResult",
    "BindingError",
    "BranchCase",
    "BranchNode",
    "CheckpointNotFoundError",
    "CheckpointDelta",
    "Checkpointer",
    "CorruptRunStateError",
    "Diagnostic",
    "DistributedForeach",
    "Engine",
    "ExecutionFrame",
    "FileCheckpointer",
    "ForeachActivation",
    "ForeachContext",
    "ForeachItemsFailedError",
    "ForeachNode",
    "GraphSourcePath",
    "IdFactory",
    "InMemoryCheckpointer",
    "InputBinding",
    "InputValidationError",
    "Interrupt",
    "ItemOutcome",
    "InterruptNode",
    "Lineage",
    "LocalPath",
    "MappingResolver",
    "NodeFailedError",
    "OutputBinding",
    "PartLedger",
    "PathOption",
    "PathSyntaxError",
    "RandomIds",
    "ResumeError",
    "RetryPolicy",
    "Route",
    "RunResult",
    "RunState",
    "RuntimeContext",
    "RuntimeScope",
    "SequentialIds",
    "SqliteCheckpointer",
    "StatePath",
    "StepCall",
    "StepCancelledError",
    "StepExecutor",
    "StepLimitError",
    "StepMemoryError",
    "StepResultTooLargeError",
    "StepTimeoutError",
    "SubgraphDepthError",
    "SubgraphNode",
    "SubgraphResolutionError",
    "TaskError",
    "TaskNode",
    "TaskRegistrationError",
    "TaskRegistry",
    "TaskResultError",
    "TaskSpec",
    "TraceEvent",
    "UnknownNodeError",
    "UnknownTaskError",
    "UnreachableNodeError",
    "Workflow",
    "WorkflowBuildError",
    "WorkflowBuilder",
    "WorkflowError",
    "WorkflowOutput",
    "WorkflowRef",
    "WorkflowResolver",
    "WorkflowRoute",
    "WorkflowValidationError",
    "activation_progress",
    "analyze",
    "builtin_registry",
    "check_resume",
    "check_run_input",
    "context_path",
    "distributed_foreach",
    "default_registry",
    "frame_context",
    "input_path",
    "json_type",
    "parse_local_path",
    "parse_source_path",
    "parse_state_path",
    "schema_type_label",
    "state_path",
    "task",
]
