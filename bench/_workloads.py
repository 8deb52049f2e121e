"""The engine bench's workloads, each built twice: as a Trellis document and as a LangGraph graph.

Both sides do the same trivial work per node step (add one to an integer, or
double an item and write nothing), so the difference measured is the cost of
the engines themselves: scheduling, state handling, tracing, checkpoints.

``steps`` of a workload is the number of node executions, counted the same
way on both sides (LangGraph's fan-out node is counted like Trellis's foreach
node), so microseconds per step = wall time / steps on both sides.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

from runtime import Checkpointer, Engine, ForeachNode, Route, TaskRegistry, Workflow, WorkflowBuilder

COUNTER_STATE: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "integer", "default": 0}}}


def registry() -> TaskRegistry:
    tasks = TaskRegistry()

    @tasks.task
    def inc(x: int) -> int:
        return x + 1

    @tasks.task(labels=("again", "done"))
    def count(x: int, limit: int) -> Any:
        return Route("again" if x + 1 < limit else "done", x + 1)

    @tasks.task
    def touch(x: int) -> int:
        return x * 2

    return tasks


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    steps: int  # node executions per call, the same count on both sides
    calls: int  # how many times the workflow is invoked (each a fresh run)
    input: Any


# ---------------------------------------------------------------------------
# Trellis documents


def trellis_runs(workflow: Workflow, inputs: list[Any], checkpointer: Callable[[], Checkpointer | None], *,
                 who: str = "trellis", close: Callable[[Any], None] | None = None
                 ) -> tuple[Callable[[], Engine], Callable[[Engine], Any]]:
    """What ``bench_engine.timed`` measures of a Trellis workload: ``prepare`` (not timed) makes an engine with a
    fresh ``checkpointer()`` and compiles ``workflow`` (analysis + compilation, like LangGraph's
    ``graph.compile()``); ``run`` runs each input, refusing a run that does not complete (a benchmark of a
    broken run measures nothing), hands the checkpointer to ``close`` (one that holds a connection), and returns
    the last output."""
    tasks = registry()

    def prepare() -> Engine:
        engine = Engine(registry=tasks, checkpointer=checkpointer())
        engine.compile(workflow)
        return engine

    def run(engine: Engine) -> Any:
        result = None
        for value in inputs:
            result = engine.run(workflow, value)
            if result.status != "completed":
                raise RuntimeError(f"{who} {workflow.id}: {result.status} {result.error}")
        if close is not None:
            close(engine.checkpointer)
        return result.output if result is not None else None

    return prepare, run


def trellis_chain(length: int) -> Workflow:
    g = WorkflowBuilder("bench-chain", state_schema=COUNTER_STATE)
    previous = None
    for i in range(length):
        node = g.use("inc", f"n{i}", input=[{"target": "x", "path": "state.x"}],
                     output=[{"source": ".", "target": "x"}])
        if previous is not None:
            g.set_route(previous, "ok", node)
        previous = node
    g.output("x", "state.x")
    return g.build()


def trellis_loop(limit: int) -> Workflow:
    g = WorkflowBuilder("bench-loop", state_schema=COUNTER_STATE)
    node = g.use("count", "step", input=[{"target": "x", "path": "state.x"}, {"target": "limit", "value": limit}],
                 output=[{"source": ".", "target": "x"}])
    g.set_route(node, "again", node)  # the back-edge
    g.output("x", "state.x")
    return g.build()


def trellis_foreach() -> Workflow:
    g = WorkflowBuilder("bench-foreach", input_schema={"type": "object", "properties": {"items": {"type": "array"}}})
    each = g.foreach("each", "input.items")
    body = g.use("touch", "body", input=[{"target": "x", "path": each.item}])
    g.set_route(each, "loop", body)
    g.set_route(body, "ok", each)
    return g.build()


def trellis_nested() -> Workflow:
    g = WorkflowBuilder("bench-nested", input_schema={"type": "object", "properties": {"rows": {"type": "array"}}})
    rows = g.foreach("rows", "input.rows")
    cells = g.foreach("cells", rows.item)
    body = g.use("touch", "body", input=[{"target": "x", "path": cells.item}])
    g.set_route(rows, "loop", cells)
    g.set_route(cells, "loop", body)
    g.set_route(body, "ok", cells)
    g.set_route(cells, "done", rows)
    return g.build()


def trellis_loop_then_pause(limit: int) -> Workflow:
    """Loops ``limit`` times, then waits at an interrupt; resuming runs one more task."""
    g = WorkflowBuilder("bench-pause", state_schema=COUNTER_STATE)
    step = g.use("count", "step", input=[{"target": "x", "path": "state.x"}, {"target": "limit", "value": limit}],
                 output=[{"source": ".", "target": "x"}])
    ask = g.interrupt("ask", prompt="continue?", resume_schema={"type": "object"})
    finish = g.use("inc", "finish", input=[{"target": "x", "path": "state.x"}], output=[{"source": ".", "target": "x"}])
    g.set_route(step, "again", step)
    g.set_route(step, "done", ask)
    g.set_route(ask, "ok", finish)
    g.output("x", "state.x")
    return g.build()


def trellis_foreach_then_pause() -> Workflow:
    """A foreach over ``input.items``, then an interrupt: the finished activation must leave no trace in RunState."""
    g = WorkflowBuilder("bench-foreach-pause", state_schema=COUNTER_STATE,
                        input_schema={"type": "object", "properties": {"items": {"type": "array"}}})
    each = g.foreach("each", "input.items")
    body = g.use("touch", "body", input=[{"target": "x", "path": each.item}])
    ask = g.interrupt("ask", prompt="continue?", resume_schema={"type": "object"})
    finish = g.use("inc", "finish", input=[{"target": "x", "path": "state.x"}], output=[{"source": ".", "target": "x"}])
    g.set_route(each, "loop", body)
    g.set_route(body, "ok", each)
    g.set_route(each, "done", ask)
    g.set_route(ask, "ok", finish)
    g.output("x", "state.x")
    return g.build()


def trellis_deep(depth: int) -> Workflow:
    """``depth`` nested foreach nodes, each over its parent item's ``children``; the innermost body pauses."""
    g = WorkflowBuilder("bench-deep", input_schema={"type": "object", "properties": {"tree": {"type": "array"}}})
    loops: list[ForeachNode] = []
    for level in range(1, depth + 1):
        over = "input.tree" if level == 1 else loops[-1].item.child("children")
        loops.append(g.foreach(f"f{level}", over, as_=f"level{level}"))
    ask = g.interrupt("ask", prompt="deep", input=[{"target": "where", "path": loops[-1].index}])
    for outer, inner in zip(loops, loops[1:], strict=False):
        g.set_route(outer, "loop", inner)
        g.set_route(inner, "done", outer)
    g.set_route(loops[-1], "loop", ask)
    g.set_route(ask, "ok", loops[-1])
    return g.build()


def deep_tree(depth: int) -> list[dict[str, Any]]:
    node: dict[str, Any] = {"name": f"leaf{depth}"}
    for level in range(depth - 1, 0, -1):
        node = {"name": f"level{level}", "children": [node]}
    return [node]


# ---------------------------------------------------------------------------
# LangGraph graphs (imported lazily: LangGraph is a bench-only dependency)


class _Counter(TypedDict):
    x: int


class _Items(TypedDict):
    items: list[Any]


class _Rows(TypedDict):
    rows: list[list[Any]]


class _Item(TypedDict):
    item: Any


class _Row(TypedDict):
    row: list[Any]


def _inc(state: _Counter) -> dict[str, Any]:
    return {"x": state["x"] + 1}


def _touch(state: _Item) -> dict[str, Any]:
    state["item"] * 2
    return {}


def _noop(state: Any) -> dict[str, Any]:
    return {}


def langgraph_chain(length: int) -> Any:
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(_Counter)
    for i in range(length):
        g.add_node(f"n{i}", _inc)
        g.add_edge(START if i == 0 else f"n{i - 1}", f"n{i}")
    g.add_edge(f"n{length - 1}", END)
    return g


def langgraph_loop(limit: int) -> Any:
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(_Counter)
    g.add_node("step", _inc)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["x"] < limit else END, ["step", END])
    return g


def langgraph_foreach() -> Any:
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    g = StateGraph(_Items)
    g.add_node("each", _noop)
    g.add_node("body", _touch, input_schema=_Item)
    g.add_edge(START, "each")
    g.add_conditional_edges("each", lambda s: [Send("body", {"item": i}) for i in s["items"]], ["body"])
    g.add_edge("body", END)
    return g


def langgraph_nested() -> Any:
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command, Send

    def row(state: _Row) -> Any:
        return Command(goto=[Send("body", {"item": v}) for v in state["row"]])

    g = StateGraph(_Rows)
    g.add_node("rows", _noop)
    g.add_node("cells", row, input_schema=_Row, destinations=("body",))
    g.add_node("body", _touch, input_schema=_Item)
    g.add_edge(START, "rows")
    g.add_conditional_edges("rows", lambda s: [Send("cells", {"row": r}) for r in s["rows"]], ["cells"])
    g.add_edge("body", END)
    return g
