"""RunState as a checkpoint format, its typed metadata helpers, ids, bindings and trace events."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import RunState
from runtime._algo import mint
from runtime._bindings import (
    MISSING,
    ScopeReader,
    build_flat_payload,
    build_payload,
    flat_reads,
    get_in,
    payload_order,
    set_in,
)
from runtime._state import ForeachItemMetadata, foreach_item_metadata, new_item_metadata, new_run_state, runtime_context
from runtime._trace import summarize
from runtime.document import InputBinding, WorkflowRef
from runtime.errors import CorruptRunStateError
from runtime.inspect import frame_context
from runtime.paths import GraphSourcePath, LocalPath
from runtime.state import ExecutionFrame, RandomIds, SequentialIds, TraceEvent
from runtime.testing.checkpointer_conformance import sample_run_state
from tests.runtime.factory_support import assert_same_as_constructor


def test_run_state_json_is_the_checkpoint_format_and_round_trips() -> None:
    rs = sample_run_state()
    text = rs.model_dump_json()
    data = json.loads(text)
    assert data["version"] == 1
    assert set(data) == {"version", "run_id", "workflow", "status", "step", "id_seq", "trace_seq", "attempt", "scopes",
                         "frames", "lineages", "ready", "barriers", "activations", "interrupts", "output", "error"}
    assert data["frames"]["frame_4"]["metadata"]["foreach"]["alias"] == "person"
    assert RunState.from_json(text) == rs
    assert RunState.from_json(data) == rs
    assert RunState.from_json(text.encode()) == rs


@pytest.mark.parametrize("change", [
    lambda d: d.update(version=2),
    lambda d: d.pop("run_id"),
    lambda d: d.update(status="sleeping"),
    lambda d: d["frames"]["frame_1"].update(status="running"),
    lambda d: d["frames"]["frame_1"].update(unexpected=1),
    lambda d: d.update(frames=[]),
])
def test_state_that_does_not_match_the_format_is_corrupt(change: Any) -> None:
    data = sample_run_state().model_dump(mode="json")
    change(data)
    with pytest.raises(CorruptRunStateError) as caught:
        RunState.from_json(data)
    assert caught.value.details["problems"]


@pytest.mark.parametrize("version", [True, 1.5, "1"])
def test_a_version_that_only_python_equates_with_1_is_corrupt(version: Any) -> None:
    data = sample_run_state().model_dump(mode="json")
    data["version"] = version
    with pytest.raises(CorruptRunStateError, match="version") as caught:
        RunState.from_json(json.dumps(data))
    assert [p["location"] for p in caught.value.details["problems"]] == ["version"]
    if version is True:
        assert "got the boolean true" in str(caught.value)


def test_invalid_json_text_is_corrupt() -> None:
    with pytest.raises(CorruptRunStateError):
        RunState.from_json("{not json")


def test_state_without_a_root_scope_is_corrupt() -> None:
    rs = sample_run_state()
    rs.scopes.clear()
    with pytest.raises(CorruptRunStateError):
        rs.root_scope  # noqa: B018


def test_item_metadata_is_typed_and_other_frames_have_none() -> None:
    rs = sample_run_state()
    meta = foreach_item_metadata(rs, rs.frames["frame_4"])
    assert meta is not None
    assert (meta.node_id, meta.activation_id, meta.index, meta.alias) == ("people", "act_3", 0, "person")
    assert meta.item == rs.activations["act_3"].items[0]
    assert foreach_item_metadata(rs, rs.frames["frame_1"]) is None


def test_context_of_a_sample_frame() -> None:
    rs = sample_run_state()
    context = frame_context(rs, "frame_4")
    assert list(context.foreach) == ["people"]
    entry = context.foreach["people"]
    assert (entry.frame_id, entry.lineage_id, entry.scope_id, entry.index) == ("frame_4", "lineage_5", "root", 0)
    mapping = context.to_mapping()
    assert mapping["person"] == mapping["loop_item"] == entry.item
    assert context.node_id == "ask" and context.run_id == rs.run_id and context.workflow_id == "conformance"
    assert dict(frame_context(rs, "frame_1").to_mapping()) == {"foreach": {}}


def _two_level_state(outer_alias: str | None, inner_alias: str | None) -> RunState:
    rs = sample_run_state()
    rs.activations["act_3"].alias = outer_alias
    rs.frames["frame_4"].metadata["foreach"]["alias"] = outer_alias
    rs.activations["act_9"] = rs.activations["act_3"].model_copy(
        update={"activation_id": "act_9", "node_id": "inner", "frame_id": "frame_4", "alias": inner_alias,
                "items": ["x"], "running": ["frame_10"]})
    rs.frames["frame_10"] = ExecutionFrame(
        frame_id="frame_10", parent_frame_id="frame_4", scope_id="root", lineage_id="lineage_11", node_id="work",
        metadata={"foreach": {"node_id": "inner", "activation_id": "act_9", "index": 0, "item": "x",
                              "alias": inner_alias}})
    return rs


def test_colliding_or_reserved_aliases_are_not_exposed() -> None:
    mapping = runtime_context(_two_level_state("same", "same"), "frame_10").to_mapping()
    assert "same" not in mapping and mapping["loop_item"] == "x"
    mapping = runtime_context(_two_level_state("loop_item", "fine"), "frame_10").to_mapping()
    assert mapping["loop_item"] == "x" and mapping["fine"] == "x"
    both = runtime_context(_two_level_state("outer", "inner_alias"), "frame_10").to_mapping()
    assert both["outer"] == sample_run_state().activations["act_3"].items[0] and both["inner_alias"] == "x"


def test_cyclic_ancestry_fails_closed() -> None:
    rs = _two_level_state(None, None)
    rs.frames["frame_1"].parent_frame_id = "frame_10"
    with pytest.raises(CorruptRunStateError, match="cycle"):
        runtime_context(rs, "frame_10")


def test_same_foreach_active_twice_in_one_scope_fails_closed() -> None:
    rs = _two_level_state(None, None)
    rs.activations["act_9"].node_id = "people"
    rs.frames["frame_10"].metadata["foreach"]["node_id"] = "people"
    with pytest.raises(CorruptRunStateError, match="active twice"):
        runtime_context(rs, "frame_10")


def test_sequential_ids_follow_the_run_counter() -> None:
    ids = SequentialIds()
    assert [ids.run_id(), ids.run_id()] == ["run_0000000000001", "run_0000000000002"]
    rs = sample_run_state()
    rs.id_seq = 41
    assert mint(rs, ids, "act") == "act_0000000000042" and rs.id_seq == 42


def test_random_ids_have_thirteen_digits_and_mint_skips_taken_ones() -> None:
    ids = RandomIds(seed=3)
    assert re.fullmatch(r"run_\d{13}", ids.run_id())
    assert re.fullmatch(r"frame_\d{13}", ids.new("frame", 1))

    class Repeating:
        def __init__(self) -> None:
            self.answers = ["frame_1", "frame_1", "frame_2"]

        def run_id(self) -> str:
            return "run_x"

        def new(self, kind: str, seq: int) -> str:
            return self.answers.pop(0)

    rs = sample_run_state()
    assert mint(rs, Repeating(), "frame") == "frame_2"  # frame_1 is taken


def test_get_in_reads_objects_and_list_positions() -> None:
    value = {"a": [{"b": 1}, {"b": 2}], "c": None}
    assert get_in(value, ("a", "1", "b")) == 2
    assert get_in(value, ("c",)) is None
    assert get_in(value, ("a", "2")) is MISSING
    assert get_in(value, ("a", "x")) is MISSING
    assert get_in(value, ("c", "d")) is MISSING


@settings(max_examples=200)
@given(base=st.dictionaries(st.sampled_from("abc"), st.integers() | st.dictionaries(st.sampled_from("xy"),
                                                                                     st.integers())),
       parts=st.lists(st.sampled_from("abcxy"), min_size=1, max_size=3), value=st.integers())
def test_set_in_writes_a_copy_and_leaves_the_original_alone(base: dict[str, Any], parts: list[str],
                                                            value: int) -> None:
    before = json.loads(json.dumps(base))
    written = set_in(base, parts, value)
    assert base == before
    assert get_in(written, parts) == value
    for key in base:
        if key != parts[0]:
            assert written[key] is base[key]  # untouched branches are shared, not copied


def test_build_payload_puts_the_whole_binding_first_and_skips_missing_values() -> None:
    reader = ScopeReader({"order": {"sku": "A", "qty": 1}}, {"note": "hi"}, lambda: {"loop_index": 3})
    bindings = [
        InputBinding(target=LocalPath(("qty",)), value=5),
        InputBinding(target=LocalPath(()), path=GraphSourcePath("input", ("order",))),
        InputBinding(target=LocalPath(("meta", "note")), path=GraphSourcePath("state", ("note",))),
        InputBinding(target=LocalPath(("absent",)), path=GraphSourcePath("state", ("nothing",))),
        InputBinding(target=LocalPath(("index",)), path=GraphSourcePath("context", ("loop_index",))),
    ]
    assert build_payload(bindings, reader) == {"sku": "A", "qty": 5, "meta": {"note": "hi"}, "index": 3}


def _binding(target: str, path: str | None = None, **extra: object) -> InputBinding:
    parts = tuple(target.split(".")) if target else ()
    source = GraphSourcePath(path.split(".")[0], tuple(path.split(".")[1:])) if path else None
    return InputBinding(target=LocalPath(parts), path=source, **extra)  # type: ignore[arg-type]


def test_a_flat_payload_is_what_the_general_builder_builds() -> None:
    """A task whose bindings each read a path into a top-level field gets its payload from ``build_flat_payload``:
    the same object the general builder makes, missing paths left out, a repeated field set by the last binding."""
    reader = ScopeReader({"order": {"sku": "A", "qty": 1}, "n": 0}, {"note": "hi", "none": None},
                         lambda: {"loop_index": 3, "foreach": {}})
    cases = [
        [],
        [_binding("x", "input.order")],
        [_binding("x", "input.order.sku"), _binding("y", "state.note"), _binding("z", "context.loop_index")],
        [_binding("x", "state.nothing"), _binding("y", "input.n"), _binding("w", "state.none")],
        [_binding("x", "input.order"), _binding("x", "state.note"), _binding("x", "state.missing")],
        [_binding("x", "context.foreach.each.item")],
    ]
    for bindings in cases:
        reads = flat_reads(payload_order(bindings))
        assert reads is not None, bindings
        expected = build_payload(bindings, reader)
        got = build_flat_payload(reads, reader)
        assert got == expected and list(got) == list(expected), bindings
    for shape in ([_binding("", "input.order")], [_binding("meta.note", "state.note")], [_binding("0", "input.n")],
                  [_binding("x", value=5)], [_binding("x", secret="token")]):
        assert flat_reads(shape) is None, shape


def test_context_is_only_derived_when_a_path_reads_it() -> None:
    calls: list[int] = []
    reader = ScopeReader({}, {"a": 1}, lambda: calls.append(1) or {})  # type: ignore[func-returns-value]
    reader.read(GraphSourcePath("state", ("a",)))
    assert calls == []
    reader.read(GraphSourcePath("context", ("foreach",)))
    reader.read(GraphSourcePath("context", ()))
    assert calls == [1]


def test_summaries_are_bounded() -> None:
    big = {"text": "x" * 1000, "list": list(range(100)), "deep": {"a": {"b": {"c": {"d": 1}}}},
           **{f"k{i}": i for i in range(20)}}
    summary = summarize(big)
    assert len(json.dumps(summary)) < 1200
    assert summary["text"].startswith("x" * 200) and summary["text"].endswith("(+800)")
    assert summary["list"][-1] == "…+92 items"
    assert summary["deep"]["a"]["b"] == "{…1 keys}"
    assert summarize(object()) == "<object>"


def test_trace_event_dict_and_record_forms() -> None:
    event = TraceEvent(seq=4, kind="node_completed", run_id="r", step=2, time=0.5, scope_id="root",
                       frame_id="frame_1", lineage_id="lineage_2", node_id="n", label="ok", duration=0.25,
                       summary={"a": 1})
    assert TraceEvent.from_dict(json.loads(json.dumps(event.to_dict()))) == event
    record = event.to_record()
    assert record["data"] == {"step": 2, "label": "ok", "summary": {"a": 1}}
    assert record["duration_ms"] == 250.0 and record["at"] == "1970-01-01T00:00:00.500000+00:00"
    assert record["activation_id"] is None and record["index"] is None
    later = TraceEvent(**{**event.to_dict(), "time": 99.0, "duration": 3.0})
    assert later.identity() == event.identity()


def test_a_started_runs_state_is_what_validation_would_make() -> None:
    ref = WorkflowRef(id="w", version=3)
    built, validated = new_run_state("run_1", ref), RunState(run_id="run_1", workflow=ref)
    assert built == validated and built.model_fields_set == validated.model_fields_set
    assert built.to_json() == validated.to_json()
    other = new_run_state("run_2", ref)
    assert built.frames is not other.frames  # nothing shared between runs
    built.status = "failed"  # an assignment records the field as set: in this state's own set only
    assert other.model_fields_set == {"run_id", "workflow"} != built.model_fields_set


def test_the_engine_s_item_metadata_factory_builds_exactly_what_the_constructor_builds() -> None:
    assert_same_as_constructor(ForeachItemMetadata, new_item_metadata)


def test_a_new_frame_and_its_lineage_skip_taken_ids_and_count_each_mint() -> None:
    """``Scheduler.new_frame`` mints the frame's and the lineage's ids itself (what ``mint`` does, twice): a taken id
    is skipped, and every id drawn counts in ``id_seq``, so a deterministic factory stays in step with a resumed run."""
    from runtime._algo import Recorder, Scheduler

    class Repeating:
        def __init__(self) -> None:
            self.answers = ["frame_1", "frame_9", "lineage_1", "lineage_9"]
            self.seqs: list[int] = []

        def run_id(self) -> str:
            return "run_x"

        def new(self, kind: str, seq: int) -> str:
            self.seqs.append(seq)
            return self.answers.pop(0)

    rs = sample_run_state()
    rs.frames["frame_1"] = rs.frames.pop(next(iter(rs.frames))).model_copy(update={"frame_id": "frame_1"})
    rs.lineages["lineage_1"] = next(iter(rs.lineages.values())).model_copy(update={"lineage_id": "lineage_1"})
    ids = Repeating()
    start = rs.id_seq
    sched = Scheduler(rs, ids, Recorder(rs, clock=lambda: 0.0), lambda scope: None)  # type: ignore[arg-type,return-value]
    frame = sched.new_frame(parent=None, scope_id="root", node_id="n", kind="root")
    assert (frame.frame_id, frame.lineage_id) == ("frame_9", "lineage_9")
    assert ids.seqs == [start + 1, start + 2, start + 3, start + 4] and rs.id_seq == start + 4
    assert rs.frames["frame_9"] is frame and rs.lineages["lineage_9"].frame_id == "frame_9"


def test_engine_made_frames_and_lineages_share_one_fields_set_that_names_every_field() -> None:
    """``trusted_full`` gives every frame (every lineage) the same fields set: safe only because it names every field,
    so an assignment (which adds the field's name) changes nothing another model sees."""
    from runtime._state import FRAME_FIELDS, LINEAGE_FIELDS, trusted_full
    from runtime.state import Lineage

    values = {"frame_id": "frame_1", "parent_frame_id": None, "scope_id": "root", "lineage_id": "lineage_2",
              "node_id": "n", "status": "ready", "waiting_for": None, "metadata": {}, "steps": 0}
    first = trusted_full(ExecutionFrame, dict(values), FRAME_FIELDS)
    second = trusted_full(ExecutionFrame, dict(values, frame_id="frame_3"), FRAME_FIELDS)
    assert first.model_fields_set is second.model_fields_set == set(ExecutionFrame.model_fields)
    assert first == ExecutionFrame.model_validate(values)
    first.status = "waiting"
    assert FRAME_FIELDS == set(ExecutionFrame.model_fields) and second.status == "ready"
    assert first.model_dump(exclude_unset=True) == ExecutionFrame.model_validate(values | {"status": "waiting"}
                                                                                 ).model_dump(exclude_unset=True)
    lineage = {"lineage_id": "lineage_2", "kind": "item", "scope_id": "root", "frame_id": "frame_1",
               "parent_lineage_id": None}
    assert trusted_full(Lineage, dict(lineage), LINEAGE_FIELDS) == Lineage.model_validate(lineage)
    assert LINEAGE_FIELDS == set(Lineage.model_fields)
