"""Foreach: activations with snapshots, barriers, item frames, concurrency limits, empty collections, nesting."""

from __future__ import annotations

from typing import Any

from runtime import Engine, RunState, WorkflowBuilder
from runtime.checkpoint import InMemoryCheckpointer
from runtime.engine import EngineOptions
from runtime.inspect import activation_progress, live_frames
from runtime.paths import input_path, state_path
from runtime.state import SequentialIds, parse_run_state
from runtime.tasks import TaskRegistry
from tests.runtime.engine_helpers import ANY_LIST, CUSTOMERS, ITEMS, engine, nested_capture


def doubling(concurrency: int = 1, *, mutate_over: bool = False) -> Any:
    g = WorkflowBuilder("doubling", input_schema={"type": "object", "properties": {"xs": ITEMS}},
                        state_schema={"type": "object", "properties": {"xs": ITEMS, "out": ANY_LIST,
                                                                       "finished": {"type": "boolean"}}})
    load = g.use("echo", id="load", input=[{"target": "value", "path": input_path("xs")}],
                 output=[{"source": ".", "target": "xs"}])
    each = g.foreach("each", state_path("xs"), as_="x", max_concurrency=concurrency)
    d = g.use("double", id="d", input=[{"target": "x", "path": each.item}],
              output=[{"source": ".", "target": "out", "mode": "append"}]
              + ([{"source": ".", "target": "xs", "mode": "append"}] if mutate_over else []))
    fin = g.use("echo", id="fin", input=[{"target": "value", "value": True}], output=[{"target": "finished"}])
    g.chain(load, "ok", each, "loop", d, "ok", each, "done", fin)
    g.output("out", state_path("out"))
    return g.build()


def test_items_run_in_order_and_done_follows_the_last() -> None:
    result = engine().run(doubling(), {"xs": [1, 2, 3]})
    assert result.output == {"out": [2, 4, 6]}
    assert result.state["finished"] is True
    kinds = [(e.kind, e.index) for e in result.trace if e.kind.startswith(("foreach", "item"))]
    assert kinds == [("foreach_started", None), ("item_started", 0), ("item_completed", 0), ("item_started", 1),
                     ("item_completed", 1), ("item_started", 2), ("item_completed", 2), ("foreach_completed", None)]


def test_over_is_snapshotted_when_the_activation_starts() -> None:
    # Each item appends to the very list being iterated; the activation keeps iterating its snapshot.
    result = engine().run(doubling(mutate_over=True), {"xs": [1, 2]})
    assert result.status == "completed"
    assert result.state["out"] == [2, 4]
    assert result.state["xs"] == [1, 2, 2, 4]


def test_empty_collection_goes_straight_to_done() -> None:
    result = engine().run(doubling(), {"xs": []})
    assert result.status == "completed"
    assert result.state == {"xs": [], "out": [], "finished": True}
    assert "d" not in {e.node_id for e in result.trace}
    events = [e for e in result.trace if e.kind.startswith("foreach")]
    assert [(e.kind, e.summary) for e in events] == [("foreach_started", {"total": 0}),
                                                     ("foreach_completed", {"total": 0, "done": 0})]
    assert events[0].activation_id == events[1].activation_id


def test_over_must_be_a_list() -> None:
    g = WorkflowBuilder("bad_over", input_schema={"type": "object", "properties": {"xs": {}}})
    each = g.foreach("each", input_path("xs"))
    e = g.use("echo", id="e")
    g.chain(each, "loop", e, "ok", each)
    result = engine().run(g.build(), {"xs": {"not": "a list"}})
    assert result.status == "failed"
    assert result.error is not None and result.error.details["node_id"] == "each"
    assert "must be a list" in result.error.message


def test_max_concurrency_bounds_running_items_and_admits_in_index_order() -> None:
    peak: list[int] = []

    def record(rs: RunState, events: Any) -> None:
        for activation in rs.activations.values():
            peak.append(len(activation.running))

    eng = engine(on_superstep=record)
    result = eng.run(doubling(concurrency=2), {"xs": [1, 2, 3, 4, 5]})
    assert result.output == {"out": [2, 4, 6, 8, 10]}
    assert max(peak) == 2
    starts = [e.index for e in result.trace if e.kind == "item_started"]
    assert starts == [0, 1, 2, 3, 4]
    # Supersteps: load, enter, then items two at a time (3 rounds), then fin.
    assert result.run_state.step == 6


def test_default_concurrency_is_one() -> None:
    result = engine().run(doubling(), {"xs": [1, 2, 3]})
    assert result.run_state.step == 6  # load, enter, three single-item rounds, fin


def test_item_frames_are_children_of_the_entering_frame_with_typed_metadata() -> None:
    g = WorkflowBuilder("pause", input_schema={"type": "object", "properties": {"xs": ITEMS}})
    each = g.foreach("each", input_path("xs"), as_="x", max_concurrency=3)
    ask = g.interrupt("ask", resume_schema={"type": "object"})
    g.chain(each, "loop", ask, "ok", each)
    result = engine().run(g.build(), {"xs": [5, 6]})
    rs = result.run_state
    (activation,) = rs.activations.values()
    entering = rs.frames[activation.frame_id]
    assert entering.status == "waiting" and entering.waiting_for == activation.activation_id
    assert rs.barriers[activation.activation_id].expected == 2
    items = [rs.frames[fid] for fid in activation.running]
    for index, frame in enumerate(items):
        assert frame.parent_frame_id == entering.frame_id
        assert frame.metadata["foreach"] == {"node_id": "each", "activation_id": activation.activation_id,
                                             "index": index, "item": [5, 6][index], "alias": "x"}
        assert rs.lineages[frame.lineage_id].kind == "item"
        assert rs.lineages[frame.lineage_id].parent_lineage_id == entering.lineage_id
    assert activation.items == [5, 6]
    (progress,) = activation_progress(rs)
    assert (progress.total, progress.done, progress.running, progress.parent_activation_id) == (2, 0, 2, None)


def test_nested_foreach_runs_inner_activations_per_outer_item() -> None:
    result = engine().run(nested_capture(after_inner=True), {"customers": CUSTOMERS})
    assert result.status == "completed"
    seen = result.output["seen"]
    assert [(s["bound"]["customer"]["name"], s["bound"]["order"]) for s in seen] == [
        ("Ada", 1), ("Ada", 2), ("Grace", 3)]
    starts = [e for e in result.trace if e.kind == "foreach_started"]
    assert [e.node_id for e in starts] == ["customers", "orders", "orders"]
    assert len({e.activation_id for e in starts}) == 3


def test_nested_activation_progress_names_the_enclosing_item() -> None:
    result = engine().run(nested_capture(interrupt=True, inner_concurrency=2), {"customers": CUSTOMERS})
    progress = {p.node_id: p for p in activation_progress(result.run_state)}
    assert progress["customers"].parent_activation_id is None
    assert progress["orders"].parent_activation_id == progress["customers"].activation_id
    assert progress["orders"].parent_index == 0
    assert (progress["orders"].total, progress["orders"].running) == (2, 2)


def test_live_frames_name_the_foreach_item_each_frame_runs() -> None:
    result = engine().run(nested_capture(interrupt=True, inner_concurrency=2), {"customers": CUSTOMERS})
    frames = live_frames(parse_run_state(result.run_state.to_json()))  # from JSON, checked like any outside state
    assert [f.frame_id for f in frames] == list(result.run_state.frames)
    items = {(f.foreach.node_id, f.foreach.index): f for f in frames if f.foreach is not None}
    assert set(items) == {("customers", 0), ("orders", 0), ("orders", 1)}
    assert items[("orders", 1)].foreach.item == 2 and items[("orders", 1)].foreach.alias == "order"
    as_json = items[("orders", 0)].to_dict()
    assert as_json["foreach"] == result.run_state.frames[as_json["frame_id"]].metadata["foreach"]
    root = next(f for f in frames if f.parent_frame_id is None)
    assert root.foreach is None and root.to_dict()["foreach"] is None and root.status == "waiting"


def test_run_state_size_follows_live_work_not_history() -> None:
    sizes: list[int] = []
    cp = InMemoryCheckpointer()
    eng = engine(checkpointer=cp, on_superstep=lambda rs, _: sizes.append(len(rs.frames) + len(rs.lineages)))
    short = eng.run(doubling(concurrency=2), {"xs": list(range(4))})
    long = eng.run(doubling(concurrency=2), {"xs": list(range(40))})
    assert max(sizes) <= 2 * 3  # the entering frame and at most two items, each with its lineage
    assert short.run_state.frames == long.run_state.frames == {}


def test_body_lineage_ending_without_returning_still_completes_the_item() -> None:
    # The analyzer rejects such documents (region.no_return); resolve the state by hand to
    # check the engine's fallback: the barrier never waits for an item that has ended.
    reg = TaskRegistry()

    @reg.task(labels=("ok", "stop"))
    def maybe(x: int) -> Any:
        from runtime.tasks import Route

        return Route("stop" if x == 2 else "ok", x)

    g = WorkflowBuilder("ends", input_schema={"type": "object", "properties": {"xs": ITEMS}},
                        state_schema={"type": "object", "properties": {"out": ANY_LIST}})
    each = g.foreach("each", input_path("xs"))
    m = g.use("maybe", id="m", input=[{"target": "x", "path": each.item}],
              output=[{"source": ".", "target": "out", "mode": "append"}])
    g.chain(each, "loop", m, "ok", each)
    eng = Engine(registry=reg, options=EngineOptions(ids=SequentialIds()))
    from runtime._compiled import compile_workflow

    workflow = g.build()
    plan = compile_workflow(workflow, reg)
    eng._compiled.put(workflow, plan)  # skip the analyzer for this deliberately invalid document
    result = eng.run(workflow, {"xs": [1, 2, 3]})
    assert result.status == "completed"
    assert result.state["out"] == [1, 2, 3]
