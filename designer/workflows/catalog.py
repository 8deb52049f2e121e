"""The task catalogue: one runtime ``TaskRegistry`` for the whole site.

It holds the runtime's built-in tasks plus the tasks of every installed app
that has a ``workflow_tasks.py`` module, discovered at start-up the way the
admin discovers ``admin.py``. Such a module declares its own registry::

    from runtime.tasks import TaskRegistry
    registry = TaskRegistry()

    @registry.task(labels=("ok", "empty"))
    def fetch_orders(customer: str) -> list[dict]: ...

Modules that are not part of an installed app (a plug-in package, the test
suite's own tasks) are listed in the setting ``TRELLIS_TASK_MODULES``
(dotted module paths, each defining ``registry`` the same way), merged after
the apps' modules. Changing that setting at run time (``override_settings``,
pytest-django's ``settings`` fixture) rebuilds the catalogue on next use, so
tests add tasks without touching this module's internals::

    def test_something(settings):
        settings.TRELLIS_TASK_MODULES = ["tests.browser.editor_tasks"]

Keeping a registry per module (instead of one global) makes a duplicate
task name an error that names both modules, instead of a silent override.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from typing import Any

from django.apps import apps
from django.core.signals import setting_changed
from django.utils.module_loading import module_has_submodule

from designer.conf import trellis
from runtime.errors import TaskRegistrationError
from runtime.tasks import TaskRegistry, builtin_registry

MODULE_NAME = "workflow_tasks"
SETTING = "TRELLIS_TASK_MODULES"

_lock = threading.Lock()
_registry: TaskRegistry | None = None


#: Installed apps (their names, in order) -> those with a ``workflow_tasks`` module. Looking for the module
#: (``module_has_submodule``, a search of the import path) at every run was ~4% of a one-step run's worker time.
_apps_with_tasks: dict[tuple[str, ...], list[str]] = {}


def task_modules() -> list[str]:
    """Dotted paths of every module the catalogue merges, in merge order: installed apps' ``workflow_tasks``
    modules, then ``settings.TRELLIS_TASK_MODULES``."""
    configs = list(apps.get_app_configs())
    names = tuple(app_config.name for app_config in configs)
    found = _apps_with_tasks.get(names)
    if found is None:
        found = _apps_with_tasks[names] = [f"{app_config.name}.{MODULE_NAME}" for app_config in configs
                                           if module_has_submodule(app_config.module, MODULE_NAME)]
    found = list(found)
    found.extend(path for path in trellis.TASK_MODULES if path not in found)
    return found


def _declared(module_path: str) -> TaskRegistry:
    module = importlib.import_module(module_path)
    declared = getattr(module, "registry", None)
    if not isinstance(declared, TaskRegistry):
        raise TaskRegistrationError(
            f"{module_path} must define `registry = runtime.tasks.TaskRegistry()` and register its tasks on it",
            module=module_path,
        )
    return declared


def build_registry(modules: Sequence[str] | None = None) -> TaskRegistry:
    """A fresh registry: built-ins merged with the ``registry`` of every module of ``modules`` (by default
    ``task_modules()``; the step processes get the worker's list, so they build the same catalogue)."""
    combined = builtin_registry()
    for module_path in task_modules() if modules is None else modules:
        declared = _declared(module_path)
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
    """Called from ``AppConfig.ready``: import every task module now, so a broken
    one fails at start-up rather than on the first request that needs the catalogue."""
    registry()


def reset() -> None:
    """Forget the built registry; the next ``registry()`` call rebuilds it from the current settings."""
    global _registry
    with _lock:
        _registry = None


def _settings_changed(*, setting: str, **_: Any) -> None:
    # Not INSTALLED_APPS: swapping apps re-runs AppConfig.ready (autodiscover), and
    # tests that install a deliberately broken app only want build_registry() to fail.
    if setting == SETTING:
        reset()


setting_changed.connect(_settings_changed, dispatch_uid="designer.workflows.catalog.settings_changed")
