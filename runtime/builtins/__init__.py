"""Built-in tasks shipped with the runtime; ``builtin_registry()`` returns a registry holding them.

Every built-in is an ordinary typed task, so its input and result schemas come
from the registry like any user task's. None of them evaluates Python: data
expressions are JMESPath and templates only substitute named values.
"""

from __future__ import annotations

from runtime._registry import TaskRegistry
from runtime.builtins import _data, _net, _numbers

#: Names of the built-in tasks, in registration order.
BUILTIN_TASKS = ("transform", "template", "set_value", "collect", "length", "math", "compare", "http_request", "wait")


#: The built-ins that only reshape data already in the run: a spent run budget still lets them run (an error
#: route can record what happened and shape the output), while ``http_request``, ``wait`` and every other task
#: are held to it.
DATA_TASKS = frozenset({_data.transform, _data.template, _data.set_value, _data.collect, _data.length,
                        _numbers.math, _numbers.compare})


def register_builtins(registry: TaskRegistry) -> None:
    """Register every built-in task into ``registry``."""
    registry.register(_data.transform, name="transform")
    registry.register(_data.template, name="template")
    registry.register(_data.set_value, name="set_value")
    registry.register(_data.collect, name="collect")
    registry.register(_data.length, name="length")
    registry.register(_numbers.math, name="math")
    registry.register(_numbers.compare, name="compare", labels=("true", "false"))
    registry.register(_net.http_request, name="http_request")
    registry.register(_net.wait, name="wait")


def builtin_registry() -> TaskRegistry:
    """A fresh registry holding the built-in tasks."""
    registry = TaskRegistry()
    register_builtins(registry)
    return registry
