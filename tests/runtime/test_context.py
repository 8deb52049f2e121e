"""Runtime context: the seed's "Runtime context" required tests, run through the real engine."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from runtime import Engine, RunState
from runtime._algo import _context_summary, context_summary
from runtime._bindings import MISSING, ScopeReader
from runtime._context import ForeachContext, RuntimeContext, foreach_context
from runtime._trace import summarize
from runtime.engine import EngineOptions
from runtime.errors import CorruptRunStateError
from runtime.inspect import frame_context
from runtime.paths import parse_source_path
from runtime.state import RandomIds, parse_run_state
from tests.runtime.engine_helpers import (
    CUSTOMERS,
    answer_all,
    engine,
    json_round_trip,
    nested_capture,
    registry,
    single_foreach,
)
from tests.runtime.factory_support import assert_same_as_constructor

ID = re.compile(r"^(act|frame|lineage)_\d{13}$")


def entry_ids_are_well_formed(entry: dict[str, Any]) -> None:
    assert ID.match(entry["activation_id"]) and entry["activation_id"].startswith("act_")
    assert ID.match(entry["frame_id"]) and entry["frame_id"].startswith("frame_")
    assert ID.match(entry["lineage_id"]) and entry["lineage_id"].startswith("lineage_")


def test_single_foreach_exposes_one_structured_entry() -> None:
    result = Engine(registry=registry()).run(single_foreach(), {"orders": [7, 8]})
    assert result.status == "completed"
    first, second = result.output["seen"]
    for seen, index, item in ((first, 0, 7), (second, 1, 8)):
        assert list(seen["bound"]["foreach"]) == ["orders"]
        entry = seen["bound"]["foreach"]["orders"]
        assert entry["node_id"] == "orders"
        assert entry["index"] == index and entry["item"] == item
        assert entry["scope_id"] == "root"
        assert entry["frame_id"] == seen["frame_id"] and entry["lineage_id"] == seen["lineage_id"]
        entry_ids_are_well_formed(entry)
        # Python context and graph-visible context agree field for field.
        assert seen["typed"] == seen["bound"]["foreach"]
    assert first["bound"]["foreach"]["orders"]["activation_id"] == second["bound"]["foreach"]["orders"]["activation_id"]


def test_nested_body_exposes_outer_and_inner_entries() -> None:
    result = engine().run(nested_capture(), {"customers": CUSTOMERS})
    seen = result.output["seen"]
    assert [(s["bound"]["foreach"]["customers"]["index"], s["bound"]["foreach"]["orders"]["item"]) for s in seen] == [
        (0, 1), (0, 2), (1, 3)]
    for snapshot in seen:
        foreach = snapshot["bound"]["foreach"]
        assert list(foreach) == ["customers", "orders"]  # outermost first
        assert foreach["customers"]["item"] == CUSTOMERS[foreach["customers"]["index"]]
        assert foreach["orders"]["frame_id"] == snapshot["frame_id"]
        assert foreach["customers"]["frame_id"] != snapshot["frame_id"]
        assert snapshot["typed"] == foreach
        assert list(snapshot["typed"]) == ["customers", "orders"]


def test_loop_item_and_loop_index_select_innermost_entry() -> None:
    result = engine().run(nested_capture(), {"customers": CUSTOMERS})
    for snapshot in result.output["seen"]:
        inner = snapshot["bound"]["foreach"]["orders"]
        assert snapshot["bound"]["loop_item"] == inner["item"] == snapshot["loop_item"]
        assert snapshot["bound"]["loop_index"] == inner["index"] == snapshot["loop_index"]


def test_unique_outer_and_inner_aliases_available_together() -> None:
    result = engine().run(nested_capture(), {"customers": CUSTOMERS})
    for snapshot in result.output["seen"]:
        bound = snapshot["bound"]
        assert bound["customer"] == bound["foreach"]["customers"]["item"]
        assert bound["order"] == bound["foreach"]["orders"]["item"]


def test_inner_completion_restores_outer_entry_and_removes_inner() -> None:
    result = engine().run(nested_capture(after_inner=True), {"customers": CUSTOMERS})
    after = result.state["after"]
    assert len(after) == 2
    for index, snapshot in enumerate(after):
        bound = snapshot["bound"]
        assert list(bound["foreach"]) == ["customers"]
        assert bound["foreach"]["customers"]["index"] == index
        assert bound["loop_item"] == CUSTOMERS[index] and bound["loop_index"] == index
        assert bound["customer"] == CUSTOMERS[index]
        assert "order" not in bound
        # Back in the outer item frame: the same frame the inner entries hung from.
        inner_parents = {s["bound"]["foreach"]["customers"]["frame_id"] for s in result.state["seen"]
                         if s["bound"]["foreach"]["customers"]["index"] == index}
        assert inner_parents == {snapshot["frame_id"]}


def test_concurrent_item_frames_receive_distinct_identities() -> None:
    customers = [{"name": "A", "orders": [1, 2, 3]}, {"name": "B", "orders": [4, 5, 6]}]
    result = engine().run(nested_capture(inner_concurrency=3, outer_concurrency=2), {"customers": customers})
    seen = result.output["seen"]
    assert len(seen) == 6
    inner = [s["bound"]["foreach"]["orders"] for s in seen]
    assert len({e["frame_id"] for e in inner}) == 6
    assert len({e["lineage_id"] for e in inner}) == 6
    # one inner activation per customer, shared by that customer's items
    by_customer: dict[int, set[str]] = {}
    for snapshot in seen:
        customer = snapshot["bound"]["foreach"]["customers"]["index"]
        by_customer.setdefault(customer, set()).add(snapshot["bound"]["foreach"]["orders"]["activation_id"])
    assert all(len(ids) == 1 for ids in by_customer.values())
    assert len(set.union(*by_customer.values())) == 2
    outer = {s["bound"]["foreach"]["customers"]["frame_id"] for s in seen}
    assert len(outer) == 2
    assert sorted(e["item"] for e in inner) == [1, 2, 3, 4, 5, 6]


def test_interrupt_resume_recreates_same_structured_entries() -> None:
    workflow = nested_capture(interrupt=True, inner_concurrency=2)
    eng = Engine(registry=registry(), options=EngineOptions(ids=RandomIds()))
    first = eng.run(workflow, {"customers": CUSTOMERS})
    assert first.status == "interrupted" and len(first.interrupts) == 2
    before = {i.frame_id: frame_context(first.run_state, i.frame_id).to_mapping() for i in first.interrupts}
    # Through JSON, into an engine that has never seen this run.
    fresh = Engine(registry=registry(), options=EngineOptions(ids=RandomIds()))
    finished = answer_all(fresh, first, workflow)
    assert finished.status == "completed"
    confirmed = {c["frame_id"]: c["bound"] for c in finished.state["after"]}
    for frame_id, context in before.items():
        assert json.loads(json.dumps(dict(context))) == confirmed[frame_id]
    assert len(finished.state["answers"]) == 3


def _interrupted_state() -> tuple[RunState, str]:
    result = engine().run(nested_capture(interrupt=True), {"customers": CUSTOMERS})
    assert result.status == "interrupted"
    return result.run_state, result.interrupts[0].interrupt_id


def _corrupt(rs: RunState, how: str) -> dict[str, Any]:
    data = json.loads(rs.model_dump_json())
    interrupt = next(iter(data["interrupts"].values()))
    frame = data["frames"][interrupt["frame_id"]]
    meta = frame["metadata"]["foreach"]
    if how == "missing_key":
        del meta["activation_id"]
    elif how == "index_not_int":
        meta["index"] = "0"
    elif how == "index_bool":
        meta["index"] = True
    elif how == "negative_index":
        meta["index"] = -1
    elif how == "index_outside_activation":
        meta["index"] = 99
    elif how == "not_an_object":
        frame["metadata"]["foreach"] = ["orders", 0]
    elif how == "missing_activation":
        del data["activations"][meta["activation_id"]]
    elif how == "activation_of_other_node":
        meta["node_id"] = "customers"
    elif how == "dangling_parent":
        frame["parent_frame_id"] = "frame_0000000099999"
    elif how == "outer_metadata_broken":
        outer_item = data["frames"][frame["parent_frame_id"]]  # the customers item the orders item runs in
        outer_item["metadata"]["foreach"]["alias"] = 5
    return data


CORRUPTIONS = ["missing_key", "index_not_int", "index_bool", "negative_index", "index_outside_activation",
               "not_an_object", "missing_activation", "activation_of_other_node", "dangling_parent",
               "outer_metadata_broken"]


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_malformed_persisted_foreach_metadata_fails_closed(how: str) -> None:
    rs, interrupt_id = _interrupted_state()
    frame_id = rs.interrupts[interrupt_id].frame_id
    data = _corrupt(rs, how)
    with pytest.raises(CorruptRunStateError) as caught:
        parse_run_state(data)
    assert caught.value.code == "runstate.corrupt"
    # The same damage in an object a caller holds is refused as much by each call that reads it.
    damaged = RunState.model_validate(data)
    with pytest.raises(CorruptRunStateError):
        frame_context(damaged, frame_id)
    with pytest.raises(CorruptRunStateError):
        engine().resume(damaged, interrupt_id, {"answer": "yes"}, workflow=nested_capture(interrupt=True))


def test_intact_state_resumes_where_corrupt_copies_fail() -> None:
    rs, interrupt_id = _interrupted_state()
    result = engine().resume(parse_run_state(json_round_trip(rs)), interrupt_id, {"answer": "yes"},
                             workflow=nested_capture(interrupt=True))
    assert result.status == "interrupted"
    assert result.state["answers"] == ["yes"]


def test_frame_context_of_unknown_frame_fails_closed() -> None:
    rs, _ = _interrupted_state()
    with pytest.raises(CorruptRunStateError):
        frame_context(rs, "frame_9999999999999")


def test_node_started_events_record_the_context_of_item_frames() -> None:
    result = engine().run(single_foreach(), {"orders": [5]})
    started = [e for e in result.trace if e.kind == "node_started" and e.node_id == "seen"]
    assert len(started) == 1
    context = started[0].summary["context"]
    assert context["loop_item"] == 5 and context["order"] == 5
    assert context["foreach"]["orders"]["frame_id"] == started[0].frame_id
    assert started[0].activation_id == context["foreach"]["orders"]["activation_id"]
    assert started[0].index == 0


def test_recorded_context_bounds_items_but_keeps_their_structure() -> None:
    result = engine().run(nested_capture(), {"customers": CUSTOMERS})
    started = next(e for e in result.trace if e.kind == "node_started" and e.node_id == "seen")
    foreach = started.summary["context"]["foreach"]
    assert foreach["customers"]["item"] == CUSTOMERS[0]
    assert foreach["orders"]["item"] == 1
    assert started.summary["context"]["customer"] == CUSTOMERS[0]


def test_the_flat_foreach_context_summary_equals_the_general_one() -> None:
    """``_context_summary`` takes a short path for one loop without alias; it must give what the general path
    gives (bounded items, the item's summary shared with ``loop_item``, identities whole, keys in order)."""
    long_item = {"text": "x" * 500, "rows": list(range(20))}
    for item in (7, "short", long_item, None):
        entry = {"node_id": "each", "activation_id": "act_1", "frame_id": "frame_1", "scope_id": "root",
                 "lineage_id": "lineage_1", "index": 3, "item": item}
        flat = {"foreach": {"each": entry}, "loop_item": item, "loop_index": 3}
        # The same mapping with one more key (an alias) goes the general way; dropping the key again from its
        # summary leaves what the flat mapping's summary must be.
        general = _context_summary({**flat, "alias": item})
        del general["alias"]
        got = _context_summary(flat)
        assert got == general and list(got) == list(general) == ["foreach", "loop_item", "loop_index"]
        assert got["foreach"]["each"] is not entry and got["foreach"]["each"]["item"] == summarize(item)
        if isinstance(item, dict):
            assert got["loop_item"] is got["foreach"]["each"]["item"]  # summarized once, as the general path does


def test_the_engine_s_foreach_context_factory_builds_exactly_what_the_constructor_builds() -> None:
    assert_same_as_constructor(ForeachContext, foreach_context)


def _contexts() -> list[RuntimeContext]:
    """Contexts of each shape a step may have: none, one flat loop (scalar, long, missing item), an alias, two
    nested loops."""
    def entry(node_id: str, index: int, item: object) -> ForeachContext:
        return ForeachContext(node_id, f"act_{index}", f"frame_{node_id}", "root", f"lineage_{node_id}", index, item)

    long_item = {"text": "x" * 500, "rows": list(range(20)), "nested": {"tags": ["a", "b"]}}
    contexts = [RuntimeContext()]
    for item in (7, "short", long_item, None, [1, 2]):
        contexts.append(RuntimeContext(foreach={"each": entry("each", 3, item)}))
    contexts.append(RuntimeContext(foreach={"each": entry("each", 1, long_item)}, aliases={"row": "each"}))
    contexts.append(RuntimeContext(foreach={"outer": entry("outer", 0, long_item), "inner": entry("inner", 2, 5)},
                                   aliases={"row": "outer"}))
    return contexts


def test_the_summary_built_from_the_context_equals_the_one_built_from_its_mapping() -> None:
    """The engine summarizes an item step's context straight from its ``RuntimeContext`` (``context_summary``):
    it must record what summarizing the graph-visible mapping records, keys in the same order."""
    for context in _contexts()[1:]:
        expected = _context_summary(context.to_mapping())
        got = context_summary(context)
        assert got == expected and json.dumps(got) == json.dumps(expected)


CONTEXT_PATHS = ["context", "context.foreach", "context.foreach.each", "context.foreach.each.item",
                 "context.foreach.each.item.text", "context.foreach.each.item.rows.3", "context.foreach.each.item.1",
                 "context.foreach.each.index", "context.foreach.each.frame_id", "context.foreach.each.nope",
                 "context.foreach.missing.item", "context.foreach.outer.item.nested.tags.1",
                 "context.foreach.inner.item", "context.foreach.each.item.0.deeper", "context.loop_item",
                 "context.loop_index", "context.row", "context.foreach.each.to_json"]


def test_a_reader_given_the_runtime_context_reads_what_the_mapping_holds() -> None:
    """A step's reader reads ``context.foreach.<id>.<field>`` from the typed entries instead of building the
    mapping; every context path must read the same value (or the same absence) either way."""
    for context in _contexts():
        typed = ScopeReader({}, {}, None, runtime=context)
        mapped = ScopeReader({}, {}, context.to_mapping)
        for path in CONTEXT_PATHS:
            parsed = parse_source_path(path)
            assert typed.read(parsed) == mapped.read(parsed), (path, context)
            assert (typed.read(parsed) is MISSING) == (mapped.read(parsed) is MISSING), path


def test_items_of_a_flat_foreach_without_alias_see_one_context_everywhere() -> None:
    """The engine hands an item of a foreach without an alias a context built from what it cached when it admitted
    the item: the typed entries, the bound mapping and the recorded context agree, each item with its own
    identities."""
    for concurrency in (1, 3):
        workflow = single_foreach(concurrency=concurrency, alias=None)
        result = engine().run(workflow, {"orders": [4, 5, 6, 7]})
        assert result.status == "completed"
        seen = result.output["seen"]
        assert [s["bound"]["foreach"]["orders"]["item"] for s in seen] == [4, 5, 6, 7]
        for index, snapshot in enumerate(seen):
            assert snapshot["typed"] == snapshot["bound"]["foreach"]
            assert snapshot["bound"]["loop_index"] == snapshot["loop_index"] == index
            assert set(snapshot["bound"]) == {"foreach", "loop_item", "loop_index"}
            assert snapshot["bound"]["foreach"]["orders"]["frame_id"] == snapshot["frame_id"]
        assert len({s["lineage_id"] for s in seen}) == 4
        started = [e for e in result.trace if e.kind == "node_started" and e.node_id == "seen"]
        assert [e.summary["context"]["foreach"] for e in started] == [s["typed"] for s in seen]


def test_items_of_nested_foreach_without_aliases_see_one_context_everywhere() -> None:
    """The same for an inner item, whose cached entries are its outer item's and its own."""
    customers = [{"name": "A", "orders": [1, 2, 3]}, {"name": "B", "orders": [4]}]
    for inner, outer in ((1, 1), (3, 2)):
        result = engine().run(nested_capture(inner_concurrency=inner, outer_concurrency=outer, aliases=False),
                              {"customers": customers})
        assert result.status == "completed"
        seen = result.output["seen"]
        assert sorted((s["bound"]["foreach"]["customers"]["index"], s["bound"]["foreach"]["orders"]["item"])
                      for s in seen) == [(0, 1), (0, 2), (0, 3), (1, 4)]
        for snapshot in seen:
            assert snapshot["typed"] == snapshot["bound"]["foreach"]
            assert list(snapshot["typed"]) == ["customers", "orders"]
            assert set(snapshot["bound"]) == {"foreach", "loop_item", "loop_index"}
            assert snapshot["bound"]["foreach"]["orders"]["frame_id"] == snapshot["frame_id"]
            assert snapshot["bound"]["foreach"]["customers"]["item"]["orders"].count(snapshot["loop_item"]) == 1
        started = [e for e in result.trace if e.kind == "node_started" and e.node_id == "seen"]
        assert [e.summary["context"]["foreach"] for e in started] == [s["typed"] for s in seen]
