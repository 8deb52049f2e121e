"""Tasks and workflows the engine tests share."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from runtime import Engine, RunResult, RunState, Workflow, WorkflowBuilder
from runtime.document import ForeachNode, TaskNode
from runtime.engine import EngineOptions
from runtime.paths import input_path, state_path
from runtime.state import RuntimeContext, SequentialIds
from runtime.tasks import TaskRegistry

ITEMS = {"type": "array", "items": {"type": "integer"}}
#: A workflow input of one list of integers, ``xs``.
XS_INPUT = {"type": "object", "properties": {"xs": ITEMS}, "required": ["xs"]}
ANY_LIST: dict[str, Any] = {"type": "array", "default": []}


def registry() -> TaskRegistry:
    reg = TaskRegistry()

    @reg.task
    def double(x: int) -> int:
        return x * 2

    @reg.task
    def add(a: int, b: int = 0) -> int:
        return a + b

    @reg.task
    def echo(value: Any = None) -> Any:
        return value

    @reg.task
    def capture(bound: dict[str, Any], ctx: RuntimeContext) -> dict[str, Any]:
        """What a body node sees: the bound JSON context and the typed RuntimeContext, side by side."""
        return {
            "bound": bound,
            "typed": {key: entry.to_json() for key, entry in ctx.foreach.items()},
            "loop_item": ctx.loop_item,
            "loop_index": ctx.loop_index,
            "frame_id": ctx.frame_id,
            "scope_id": ctx.scope_id,
            "lineage_id": ctx.lineage_id,
        }

    @reg.task
    def boom(message: str = "boom") -> int:
        raise RuntimeError(message)

    @reg.task
    async def slow(value: Any = None, delay: float = 0.0) -> Any:
        await asyncio.sleep(delay)
        return value

    @reg.task
    async def jitter(value: Any = None) -> Any:
        await asyncio.sleep(random.random() * 0.02)
        return value

    @reg.task(labels=("small", "big"))
    def size(x: int) -> Any:
        from runtime.tasks import Route

        return Route("big" if x >= 10 else "small", x)

    return reg


def engine(**kwargs: Any) -> Engine:
    tasks = kwargs.pop("registry", None) or registry()
    kwargs.setdefault("ids", SequentialIds())
    return Engine(tasks, options=EngineOptions(**kwargs))


def capture_input() -> list[dict[str, Any]]:
    return [{"target": "bound", "path": "context"}]


def nested_capture(*, inner_concurrency: int = 1, outer_concurrency: int = 1, after_inner: bool = False,
                   interrupt: bool = False, aliases: bool = True) -> Workflow:
    """customers -> orders (each customer's orders) -> capture (-> ask) -> back; optionally a capture after orders.
    ``aliases``: the loops are aliased ``customer`` and ``order``."""
    g = WorkflowBuilder(
        "nested",
        input_schema={"type": "object", "properties": {"customers": {"type": "array", "items": {
            "type": "object", "properties": {"name": {"type": "string"}, "orders": ITEMS},
            "required": ["name", "orders"]}}}, "required": ["customers"]},
        state_schema={"type": "object", "properties": {"seen": ANY_LIST, "after": ANY_LIST, "answers": ANY_LIST}},
    )
    customers = g.foreach("customers", input_path("customers"), as_="customer" if aliases else None,
                          max_concurrency=outer_concurrency)
    orders = g.foreach("orders", customers.item.child("orders"), as_="order" if aliases else None,
                       max_concurrency=inner_concurrency)
    seen = g.use("capture", id="seen", input=capture_input(),
                 output=[{"source": ".", "target": "seen", "mode": "append"}])
    g.chain(customers, "loop", orders, "loop", seen)
    if interrupt:
        ask = g.interrupt("ask", prompt="ok?", input=[{"target": "order", "path": orders.item}],
                          resume_schema={"type": "object", "properties": {"answer": {"type": "string"}},
                                         "required": ["answer"]},
                          output=[{"source": "answer", "target": "answers", "mode": "append"}])
        confirm = g.use("capture", id="confirm", input=capture_input(),
                        output=[{"source": ".", "target": "after", "mode": "append"}])
        g.chain(seen, "ok", ask, "ok", confirm, "ok", orders)
    else:
        g.set_route(seen, "ok", orders)
    if after_inner:
        after = g.use("capture", id="after", input=capture_input(),
                      output=[{"source": ".", "target": "after", "mode": "append"}])
        g.chain(orders, "done", after, "ok", customers)
    else:
        g.set_route(orders, "done", customers)
    g.output("seen", state_path("seen"))
    return g.build()


CUSTOMERS = [{"name": "Ada", "orders": [1, 2]}, {"name": "Grace", "orders": [3]}]


def single_foreach(*, concurrency: int = 1, alias: str | None = "order") -> Workflow:
    g = WorkflowBuilder("single", input_schema={"type": "object", "properties": {"orders": ITEMS}},
                        state_schema={"type": "object", "properties": {"seen": ANY_LIST}})
    orders = g.foreach("orders", input_path("orders"), as_=alias, max_concurrency=concurrency)
    seen = g.use("capture", id="seen", input=capture_input(),
                 output=[{"source": ".", "target": "seen", "mode": "append"}])
    g.chain(orders, "loop", seen, "ok", orders)
    g.output("seen", state_path("seen"))
    return g.build()


def json_round_trip(rs: RunState) -> RunState:
    return RunState.from_json(rs.model_dump_json())


def answer_all(eng: Engine, result: RunResult, workflow: Workflow, *, through_json: bool = True) -> RunResult:
    """Resume every interrupt, oldest first, with {"answer": "yes <order>"}, until the run stops pausing."""
    while result.status == "interrupted":
        pending = result.interrupts[0]
        state = json_round_trip(result.run_state) if through_json else result.run_state
        result = eng.resume(state, pending.interrupt_id, {"answer": f"yes {pending.payload}"}, workflow=workflow)
    return result




def asking() -> Workflow:
    """A foreach over ``input.xs`` (two at a time) whose body asks one question per item (resume ``{a: int}``);
    the answers are collected in ``state.answers``, in item order."""
    g = WorkflowBuilder("asking", input_schema=XS_INPUT)
    each = g.foreach("each", "input.xs", max_concurrency=2, results="answers")
    ask = g.interrupt("ask", prompt="?", input=[{"target": "x", "path": each.item}],
                      resume_schema={"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})
    g.chain(each, "loop", ask, "ok", each)
    g.output("answers", "state.answers")
    return g.build()


def loop_then_total(graph: WorkflowBuilder, each: ForeachNode, body: TaskNode, task: str, *, id: str,
                    results: str, target: str) -> TaskNode:
    """Route the foreach ``each`` through its one-node ``body`` and back, then once it is done on to a node ``id``
    running ``task`` over its result list (``values`` from the state path ``results``) into ``target``."""
    total = graph.use(task, id=id, input=[{"target": "values", "path": results}],
                      output=[{"source": ".", "target": target}])
    for source, label, to in ((each, "loop", body), (body, "ok", each), (each, "done", total)):
        graph.set_route(source, label, to)
    return total
