"""The analyzer's static control regions agree with the frames the real engine creates.

Hypothesis builds random well-formed workflows out of nested foreach loops,
plain tasks and retry cycles (reset -> tick -> probe -> branch back to tick),
runs them with ``runtime.Engine`` and compares, for every node that ran, the
owner stack the analyzer predicted with the dynamic one: the foreach entries
of the running frame's context, which the engine derives from frame
ancestry. Probe tasks read ``RuntimeContext.foreach`` directly; every other
node is checked through the context its ``node_started`` event records.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime import Engine, Workflow, analyze
from runtime.engine import EngineOptions
from runtime.state import RuntimeContext, SequentialIds
from runtime.tasks import TaskRegistry

Tree = list[Any]  # a block: a list of ("task",) | ("cycle",) | ("foreach", concurrency, block)

blocks = st.recursive(
    st.lists(st.sampled_from([("task",), ("cycle",)]), min_size=1, max_size=2),
    lambda inner: st.lists(
        st.one_of(st.just(("task",)), st.just(("cycle",)),
                  st.tuples(st.just("foreach"), st.integers(1, 2), inner)),
        min_size=1, max_size=3),
    max_leaves=8,
)


@dataclass
class Compiler:
    nodes: list[dict[str, Any]] = field(default_factory=list)
    routes: list[dict[str, str]] = field(default_factory=list)
    counter: itertools.count = field(default_factory=lambda: itertools.count(1))  # type: ignore[type-arg]
    cycles: list[str] = field(default_factory=list)

    def route(self, source: str, label: str, target: str | None) -> None:
        if target is not None:
            self.routes.append({"source": source, "label": label, "target": target})

    def block(self, block: Tree, after: str | None) -> str:
        """Compile ``block`` so that it continues at ``after``; returns its entry node id."""
        entry = after
        for step in reversed(block):
            entry = self.step(step, entry)
        assert entry is not None
        return entry

    def step(self, step: tuple[Any, ...], after: str | None) -> str:
        n = next(self.counter)
        if step[0] == "task":
            node_id = f"probe{n}"
            self.nodes.append({"kind": "task", "id": node_id, "task": "probe"})
            self.route(node_id, "ok", after)
            return node_id
        if step[0] == "cycle":
            counter = f"c{n}"
            self.cycles.append(counter)
            reset, tick, probe, check = f"reset{n}", f"tick{n}", f"probe{n}", f"check{n}"
            self.nodes += [
                {"kind": "task", "id": reset, "task": "put", "input": [{"target": "value", "value": 0}],
                 "output": [{"target": counter}]},
                {"kind": "task", "id": tick, "task": "inc", "input": [{"target": "n", "path": f"state.{counter}"}],
                 "output": [{"target": counter}]},
                {"kind": "task", "id": probe, "task": "probe"},
                {"kind": "branch", "id": check, "path": f"state.{counter}",
                 "cases": [{"label": "again", "op": "lt", "value": 2}]},
            ]
            self.route(reset, "ok", tick)
            self.route(tick, "ok", probe)
            self.route(probe, "ok", check)
            self.route(check, "again", tick)
            self.route(check, "default", after)
            return reset
        _, concurrency, body = step
        node_id = f"loop{n}"
        self.nodes.append({"kind": "foreach", "id": node_id, "over": "input.xs", "max_concurrency": concurrency})
        self.route(node_id, "loop", self.block(body, node_id))
        self.route(node_id, "done", after)
        return node_id


def compile_tree(tree: Tree) -> Workflow:
    compiler = Compiler()
    start = compiler.block(tree, None)
    nodes = sorted(compiler.nodes, key=lambda node: node["id"] != start)
    return Workflow.model_validate({
        "id": "generated", "nodes": nodes, "routes": compiler.routes,
        "input_schema": {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "integer"}}},
                         "required": ["xs"]},
        "state_schema": {"type": "object", "properties": {
            name: {"type": "integer", "default": 0} for name in compiler.cycles}},
    })


def make_registry(seen: list[tuple[str, tuple[str, ...]]]) -> TaskRegistry:
    registry = TaskRegistry()

    @registry.task
    def probe(ctx: RuntimeContext) -> None:
        seen.append((ctx.node_id, tuple(ctx.foreach)))

    @registry.task
    def put(value: int) -> int:
        return value

    @registry.task
    def inc(n: int) -> int:
        return n + 1

    return registry


def dynamic_stack(event: Any) -> tuple[str, ...]:
    summary = event.summary if isinstance(event.summary, dict) else {}
    context = summary.get("context") or {}
    return tuple(context.get("foreach", {}))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=blocks, items=st.integers(0, 2))
def test_static_regions_match_engine_frames(tree: Tree, items: int) -> None:
    workflow = compile_tree(tree)
    seen: list[tuple[str, tuple[str, ...]]] = []
    registry = make_registry(seen)
    analysis = analyze(workflow, registry=registry)
    assert analysis.ok, analysis.errors
    assert analysis.reachable == {node.id for node in workflow.nodes}

    result = Engine(registry, EngineOptions(ids=SequentialIds())).run(workflow, {"xs": list(range(items))})
    assert result.status == "completed", result.error

    for node_id, stack in seen:
        assert analysis.control_region(node_id) == stack, (node_id, stack)
    started = [event for event in result.trace if event.kind == "node_started"]
    assert started
    for event in started:
        assert analysis.control_region(event.node_id) == dynamic_stack(event), (event.node_id, event.summary)
    # with items, every node runs; without, exactly the nodes outside every loop body run
    ran = {event.node_id for event in started}
    expected = {node_id for node_id in analysis.reachable if items or not analysis.control_region(node_id)}
    assert ran == expected


def test_a_deep_nesting_example() -> None:
    tree: Tree = [("task",), ("foreach", 2, [("cycle",), ("foreach", 1, [("task",), ("foreach", 2, [("task",)])]),
                                             ("task",)]), ("cycle",)]
    workflow = compile_tree(tree)
    seen: list[tuple[str, tuple[str, ...]]] = []
    registry = make_registry(seen)
    analysis = analyze(workflow, registry=registry)
    assert analysis.ok, analysis.errors
    result = Engine(registry=registry, options=EngineOptions(ids=SequentialIds())).run(workflow, {"xs": [1, 2]})
    assert result.status == "completed", result.error
    stacks = {node_id: stack for node_id, stack in seen}
    deepest = max(stacks.values(), key=len)
    assert len(deepest) == 3
    assert all(analysis.control_region(node_id) == stack for node_id, stack in seen)
