"""Tasks a document's nodes call: the registry, the ``@task`` decorator and the built-ins.
"""

from __future__ import annotations

from runtime._registry import Route, TaskRegistry, TaskSpec, default_registry, task
from runtime.builtins import builtin_registry

__all__ = [
    "Route",
    "TaskRegistry",
    "TaskSpec",
    "builtin_registry",
    "default_registry",
    "task",
]
