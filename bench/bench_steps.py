"""Step isolation cost: task steps in the designer's killable step processes against the engine's own process.

The same workflows run through ``runtime.Engine`` twice: in-process (the
engine calls the task in its thread) and with ``step_executor`` set to the
designer's ``StepProcessPool`` (each step pickled to a reused child process
and its JSON result sent back). Printed per step: microseconds in-process,
in step processes, the difference (the isolation overhead) and the ratio.
Workloads: a chain of trivial ``math`` steps (one step per superstep), a
foreach of trivial steps four at a time, and a chain of ``transform`` steps
each returning a 100 KB result. Then what a killed process costs: forking its
replacement from the zygote.

Wall time, median of a few runs (the work happens in other processes, so
this process's CPU time would miss it). Timings are printed, never asserted.

    python -m bench steps
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

RUNS = 5
CHAIN = 200
ITEMS = 200
BIG = 100_000


def _setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "designer.settings")
    import django

    django.setup()


def chain(task: str, inputs: list[dict[str, Any]], length: int) -> Any:
    from runtime import WorkflowBuilder

    graph = WorkflowBuilder("chain", state_schema={"type": "object", "properties": {"last": {}}})
    previous = None
    for index in range(length):
        node = graph.use(task, id=f"s{index}", input=inputs, output=[{"source": ".", "target": "last"}])
        if previous is not None:
            graph.set_route(previous, "ok", node)
        previous = node
    return graph.build()


def fan_out(items: int) -> tuple[Any, dict[str, Any]]:
    from runtime import WorkflowBuilder

    graph = WorkflowBuilder("fan", input_schema={"type": "object", "properties": {"xs": {"type": "array"}}})
    loop = graph.foreach("each", "input.xs", max_concurrency=4)
    body = graph.use("math", id="body", input=[{"target": "op", "value": "add"}, {"target": "a", "path": loop.item},
                                                {"target": "b", "value": 1}])
    graph.set_route(loop, "loop", body)
    graph.set_route(body, "ok", loop)
    return graph.build(), {"xs": list(range(items))}


def median_seconds(engine: Any, document: Any, run_input: dict[str, Any]) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        result = engine.run(document, run_input)
        times.append(time.perf_counter() - started)
        assert result.status == "completed", result.error
    return statistics.median(times)


def main() -> int:
    _setup_django()
    from designer.runs.steps import StepProcessPool
    from designer.workflows import catalog
    from runtime import Engine
    from runtime.engine import EngineOptions, StepCall
    from runtime.state import RuntimeContext

    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    registry = catalog.registry()
    pool = StepProcessPool(processes=4, task_modules=catalog.task_modules(), max_memory_mb=512)
    pool.warm_up()
    add: list[dict[str, Any]] = [{"target": "op", "value": "add"}, {"target": "a", "value": 1},
                                 {"target": "b", "value": 2}]
    big: list[dict[str, Any]] = [{"target": "expression", "value": "@"}, {"target": "data", "value": "x" * BIG}]
    fan_doc, fan_input = fan_out(ITEMS)
    workloads = [
        (f"chain of {CHAIN} math steps", chain("math", add, CHAIN), {}, CHAIN),
        (f"foreach of {ITEMS} math steps, 4 at once", fan_doc, fan_input, ITEMS),
        (f"chain of {CHAIN // 4} steps with a {BIG // 1000} KB result", chain("transform", big, CHAIN // 4), {},
         CHAIN // 4),
    ]
    try:
        print(f"\n{'workload':<44} {'in-process':>12} {'step process':>13} {'overhead':>10} {'ratio':>7}")
        print(f"{'':<44} {'us/step':>12} {'us/step':>13} {'us/step':>10} {'':>7}")
        for name, document, run_input, steps in workloads:
            inline = Engine(registry, EngineOptions(max_workers=4, step_timeout=60, max_result_bytes=2 * 1024 * 1024))
            isolated = Engine(registry, EngineOptions(max_workers=4, step_executor=pool, step_timeout=60,
                                                      max_result_bytes=2 * 1024 * 1024))
            here = median_seconds(inline, document, run_input) / steps * 1e6
            away = median_seconds(isolated, document, run_input) / steps * 1e6
            print(f"{name:<44} {here:>12,.0f} {away:>13,.0f} {away - here:>10,.0f} {away / here:>6.1f}x")
            inline.close()
            isolated.close()

        # A killed step's process is replaced by a fork of the zygote on next use.
        context = RuntimeContext(node_id="bench", frame_id="frame_0")
        forks = []
        for _ in range(RUNS * 2):
            for child in list(pool._idle):
                pool._idle.remove(child)
                child.kill()
            started = time.perf_counter()
            pool.run_step(StepCall.of("math", {"op": "add", "a": 1, "b": 2}, context, timeout=10,
                                      max_result_bytes=None), lambda: False)
            forks.append(time.perf_counter() - started)
        print(f"\nfirst step in a fresh step process (fork from the zygote + step): "
              f"{statistics.median(forks) * 1e3:.1f} ms median")
    finally:
        pool.close()
    print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
