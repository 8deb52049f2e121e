"""A step executor's ``runs_inline``: the steps it says it runs at once in the calling thread run one after another
in the engine's thread; the others of the same superstep still go to the thread pool, concurrently."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from pydantic_core import from_json

from runtime import Engine, WorkflowBuilder
from runtime.engine import EngineOptions, StepCall
from runtime.tasks import TaskRegistry
from tests.runtime.engine_helpers import registry


class RecordingExecutor:
    """Runs every step in this process and notes which thread ran it; even inputs are inline."""

    def __init__(self, reg: TaskRegistry, *, inline: bool) -> None:
        self.reg = reg
        self.threads: dict[int, int] = {}
        if inline:
            self.runs_inline = self._runs_inline

    def _runs_inline(self, task: str, payload: Any) -> bool:
        return task == "double" and payload["x"] % 2 == 0

    def run_step(self, call: StepCall, cancelled: Callable[[], bool]) -> tuple[str, Any]:
        self.threads[call.payload["x"]] = threading.get_ident()
        label, data = call.run_here(self.reg)
        return label, from_json(data)


def workflow() -> Any:
    graph = WorkflowBuilder("inline", "Inline", input_schema={
        "type": "object", "properties": {"items": {"type": "array", "items": {"type": "integer"}}}})
    each = graph.foreach("each", "input.items", results="out", max_concurrency=4)
    body = graph.use("double", id="body", input=[{"target": "x", "path": each.item}])
    graph.chain(each, "loop", body, "ok", each)
    graph.output("out", "state.out")
    return graph.build()


def test_inline_steps_run_in_the_engines_thread_and_the_others_on_the_pool() -> None:
    reg = registry()
    executor = RecordingExecutor(reg, inline=True)
    with Engine(registry=reg, options=EngineOptions(step_executor=executor, max_workers=4)) as engine:
        result = engine.run(workflow(), {"items": list(range(12))})
    assert result.status == "completed" and result.output == {"out": [2 * i for i in range(12)]}
    here = threading.get_ident()
    assert {x for x, thread in executor.threads.items() if thread == here} == set(range(0, 12, 2))


def test_without_runs_inline_every_step_of_a_superstep_but_one_goes_to_the_pool() -> None:
    reg = registry()
    executor = RecordingExecutor(reg, inline=False)
    with Engine(registry=reg, options=EngineOptions(step_executor=executor, max_workers=4)) as engine:
        result = engine.run(workflow(), {"items": list(range(12))})
    assert result.output == {"out": [2 * i for i in range(12)]}
    # Three supersteps of four items: the first of each runs in the engine's thread (``_fan_out``).
    assert sum(thread == threading.get_ident() for thread in executor.threads.values()) == 3
