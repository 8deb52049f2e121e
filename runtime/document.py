"""The workflow document: its nodes (a union on ``kind``), bindings, routes and outputs, its JSON Schema, and
the builder that writes one in Python.
"""

from __future__ import annotations

from runtime._builder import WorkflowBuilder
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
    document_json_schema,
)

__all__ = [
    "BranchCase",
    "BranchNode",
    "ForeachNode",
    "InputBinding",
    "InterruptNode",
    "OutputBinding",
    "RetryPolicy",
    "SubgraphNode",
    "TaskNode",
    "Workflow",
    "WorkflowOutput",
    "WorkflowBuilder",
    "WorkflowRef",
    "WorkflowRoute",
    "document_json_schema",
]
