"""The task catalogue: one runtime ``TaskRegistry`` for the whole site.

It holds the runtime's built-in tasks plus the tasks of every installed app
that has a ``workflow_tasks.py`` module, discovered at start-up the way the
admin discovers ``admin.py``. Such a module declares its own registry::

    from runtime import TaskRegistry
    registry = TaskRegistry()

    @registry.task(labels=("ok", "empty"))
    def fetch_orders(customer: str) -> list[dict]: ...

Keeping a registry per module (instead of one global) makes a duplicate
task name an error that names both modules, instead of a silent override.
"""

from __future__ import annotations

import importlib
import threading

from django.apps import apps
from django.utils.module_loading import module_has_submodule

from runtime import TaskRegistrationError, TaskRegistry, builtin_registry

MODULE_NAME = "workflow_tasks"

_lock = threading.Lock()
_registry: TaskRegistry | None = None


def build_registry() -> TaskRegistry:
    """A fresh registry: built-ins merged with every installed app's ``workflow_tasks.registry``."""
    combined = builtin_registry()
    for app_config in apps.get_app_configs():
        if not module_has_submodule(app_config.module, MODULE_NAME):
            continue
        module_path = f"{app_config.name}.{MODULE_NAME}"
        module = importlib.import_module(module_path)
        declared = getattr(module, "registry", None)
        if not isinstance(declared, TaskRegistry):
            raise TaskRegistrationError(
                f"{module_path} must define `registry = runtime.TaskRegistry()` and register its tasks on it",
                module=module_path,
            )
        try:
            combined = combined.merged(declared)
        except TaskRegistrationError as exc:
            raise TaskRegistrationError(f"{module_path}: {exc.message}", module=module_path) from exc
    return combined


def registry() -> TaskRegistry:
    """The site's registry, built once (on first use or by ``autodiscover`` at start-up)."""
    global _registry
    if _registry is None:
        with _lock:
            if _registry is None:
                _registry = build_registry()
    return _registry


def autodiscover() -> None:
    """Called from ``AppConfig.ready``: import every ``workflow_tasks`` module now, so a broken
    one fails at start-up rather than on the first request that needs the catalogue."""
    registry()


def reset() -> None:
    """Forget the built registry (tests that install extra apps call this)."""
    global _registry
    with _lock:
        _registry = None
