"""Trellis runtime: workflow documents, validation and execution, free of any web framework.

The top level holds what every host needs: build or load a ``Workflow``, ``analyze`` it, run it with an
``Engine`` and read its ``RunResult`` and ``RunState``. The rest of the public surface is grouped in
submodules, each with its own ``__all__``: ``runtime.document`` (nodes, bindings, the builder),
``runtime.analysis``, ``runtime.paths``, ``runtime.engine`` (steps, budgets, resolvers, distributed foreach),
``runtime.tasks``, ``runtime.state``, ``runtime.checkpoint``, ``runtime.inspect``, ``runtime.errors`` and
``runtime.secrets``. Everything in underscore modules is internal and may change.
"""

from __future__ import annotations

from runtime._analysis import Analysis, analyze
from runtime._builder import WorkflowBuilder
from runtime._document import Workflow
from runtime._engine import Engine, RunResult
from runtime._errors import WorkflowError
from runtime._registry import task
from runtime._state import RunState

__all__ = ["Analysis", "Engine", "RunResult", "RunState", "Workflow", "WorkflowBuilder", "WorkflowError", "analyze",
           "task"]
