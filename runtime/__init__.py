"""Trellis runtime: workflow documents, validation and execution, free of any web framework.

The names in ``__all__`` are the public surface; everything in underscore
modules is internal and may change.
"""

from __future__ import annotations

from runtime._analysis import Analysis, PathOption, analyze
from runtime._builder import WorkflowBuilder
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
from runtime._errors import (
    CorruptRunStateError,
    InputValidationError,
    NodeFailedError,
    PathSyntaxError,
    ResumeError,
    SubgraphResolutionError,
    TaskRegistrationError,
    TaskResultError,
    UnknownNodeError,
    UnknownTaskError,
    UnreachableNodeError,
    WorkflowBuildError,
    WorkflowError,
    WorkflowValidationError,
)
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

__all__ = [
    "Analysis",
    "BranchCase",
    "BranchNode",
    "CorruptRunStateError",
    "Diagnostic",
    "ForeachContext",
    "ForeachNode",
    "GraphSourcePath",
    "InputBinding",
    "InputValidationError",
    "InterruptNode",
    "LocalPath",
    "MappingResolver",
    "NodeFailedError",
    "OutputBinding",
    "PathOption",
    "PathSyntaxError",
    "ResumeError",
    "RetryPolicy",
    "Route",
    "RuntimeContext",
    "StatePath",
    "SubgraphNode",
    "SubgraphResolutionError",
    "TaskNode",
    "TaskRegistrationError",
    "TaskRegistry",
    "TaskResultError",
    "TaskSpec",
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
    "analyze",
    "builtin_registry",
    "context_path",
    "default_registry",
    "input_path",
    "parse_local_path",
    "parse_source_path",
    "parse_state_path",
    "state_path",
    "task",
]
