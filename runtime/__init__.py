"""Trellis runtime: workflow documents, validation and execution, free of any web framework.

The names in ``__all__`` are the public surface; everything in underscore
modules is internal and may change.
"""

from __future__ import annotations

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
    UnknownTaskError,
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
from runtime._resolver import MappingResolver, WorkflowResolver

__all__ = [
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
    "PathSyntaxError",
    "ResumeError",
    "RetryPolicy",
    "RuntimeContext",
    "StatePath",
    "SubgraphNode",
    "SubgraphResolutionError",
    "TaskNode",
    "TaskRegistrationError",
    "UnknownTaskError",
    "Workflow",
    "WorkflowError",
    "WorkflowOutput",
    "WorkflowRef",
    "WorkflowResolver",
    "WorkflowRoute",
    "WorkflowValidationError",
    "context_path",
    "input_path",
    "parse_local_path",
    "parse_source_path",
    "parse_state_path",
    "state_path",
]
