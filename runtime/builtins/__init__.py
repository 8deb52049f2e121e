"""Built-in tasks shipped with the runtime; ``builtin_registry()`` returns a registry holding them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime._registry import TaskRegistry


def register_builtins(registry: TaskRegistry) -> None:
    """Register every built-in task into ``registry``."""
