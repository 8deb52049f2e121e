"""Tampered foreach state fails closed: every single-field change to a real checkpoint either resumes to the
untampered result or is ``CorruptRunStateError`` (on resume and on inspect alike), never a third outcome.

The checkpoints are those real nested runs took at every superstep (what a crashed worker leaves behind), some
of them paused at interrupts inside nested items, some inside a subgraph called from an item. Items are
distinct within each foreach: the RunState does not record which items of an activation have completed, so
with ``max_concurrency > 1`` an item frame moved to another completed index holding an equal item is a
consistent state, indistinguishable from a real one.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime import Engine, RunResult, RunState, Workflow
from runtime._state import foreach_item_metadata
from runtime.checkpoint import FileCheckpointer, InMemoryCheckpointer
from runtime.engine import EngineOptions
from runtime.errors import CorruptRunStateError
from runtime.inspect import activation_progress, frame_context, live_frames
from runtime.state import SequentialIds, parse_run_state
from tests.runtime.engine_helpers import answer_all, nested_capture, registry
from tests.runtime.test_scope_isolation import child_capture, parent

CUSTOMERS = [{"name": "Ada", "orders": [1, 2, 3]}, {"name": "Grace", "orders": [4]},
             {"name": "Linus", "orders": [5, 6]}]


@dataclass(frozen=True)
class Case:
    name: str
    workflow: Workflow
    workflows: dict[object, Workflow]
    run_input: dict[str, Any]


CASES = [
    Case("nested-interrupts", nested_capture(interrupt=True, inner_concurrency=2, outer_concurrency=2), {},
         {"customers": CUSTOMERS}),
    Case("nested-sequential", nested_capture(after_inner=True), {}, {"customers": CUSTOMERS}),
    Case("nested-wide", nested_capture(inner_concurrency=3, outer_concurrency=3, after_inner=True), {},
         {"customers": CUSTOMERS}),
    Case("subgraph-foreach", parent(child_orders=True),
         {"child": child_capture(with_foreach=True, interrupt=True)}, {"orders": [7, 8, 9]}),
]


def _engine(case: Case, **kwargs: Any) -> Engine:
    return Engine(registry=registry(), options=EngineOptions(ids=SequentialIds(), workflows=case.workflows, **kwargs))


def _finish(engine: Engine, case: Case, result: RunResult) -> RunResult:
    while result.status == "interrupted":
        pending = result.interrupts[0]
        result = engine.resume(parse_run_state(result.run_state.model_dump_json()), pending.interrupt_id,
                               {"answer": f"yes {pending.payload}"}, workflow=case.workflow)
    return result


def _outcome(result: RunResult) -> str:
    """The end of a run as JSON text, which tells ``1`` from ``1.0`` and ``true`` (Python's ``==`` does not)."""
    return json.dumps([result.status, result.output, result.run_state.model_dump(mode="json")], sort_keys=True)


def _inspected(state: RunState | dict[str, Any]) -> tuple[Any, ...]:
    """What inspection shows of a state: every live frame's context and every activation's progress."""
    rs = state if isinstance(state, RunState) else parse_run_state(state)
    contexts = {fid: json.dumps(dict(frame_context(rs, fid).to_mapping()), sort_keys=True)
                for fid in rs.frames}
    return contexts, [p.to_dict() for p in activation_progress(rs)]


@functools.cache
def checkpoints(name: str) -> list[tuple[str, str, tuple[Any, ...]]]:
    """(checkpoint JSON, the outcome of carrying on from it, what inspection shows of it) for every superstep."""
    case = next(c for c in CASES if c.name == name)
    saved: list[str] = []
    recording = _engine(case, on_superstep=lambda rs, _: saved.append(rs.model_dump_json()))
    final = answer_all(recording, recording.run(case.workflow, case.run_input), case.workflow)
    assert final.status == "completed", final.error
    engine = _engine(case)
    found = []
    for checkpoint in saved:
        carried = engine.continue_run(parse_run_state(checkpoint), workflow=case.workflow)
        outcome = _outcome(_finish(engine, case, carried))
        assert outcome == _outcome(final)
        found.append((checkpoint, outcome, _inspected(json.loads(checkpoint))))
    return found


def test_the_checkpoints_cover_nested_items_interrupts_and_child_scopes() -> None:
    states = [json.loads(cp) for name in ("nested-interrupts", "subgraph-foreach") for cp, _, _ in checkpoints(name)]
    assert any(len(s["activations"]) >= 2 and s["interrupts"] for s in states)
    assert any(len(s["scopes"]) > 1 and s["activations"] for s in states)
    wide = [json.loads(cp) for cp, _, _ in checkpoints("nested-wide")]
    assert any(len(a["running"]) > 1 for s in wide for a in s["activations"].values())


# --- single-field tampering ---------------------------------------------------------------------------------

JSON_ODDITIES = st.one_of(st.none(), st.booleans(), st.integers(-3, 12), st.floats(allow_nan=False),
                          st.text(max_size=4), st.just([]), st.just({}), st.just([0]))


def _item_frames(state: dict[str, Any]) -> list[str]:
    return [fid for fid, frame in state["frames"].items() if "foreach" in frame["metadata"]]


def _variants(value: Any) -> list[Any]:
    """Values JSON-close to ``value`` that a loose comparison would take for it."""
    out: list[Any] = [copy.deepcopy(value)]
    if isinstance(value, bool):
        out.append(int(value))
    elif isinstance(value, int):
        out += [float(value), value == 1, str(value), value + 1]
    elif isinstance(value, dict) and value:
        out.append(dict(reversed(list(value.items()))))  # same object, other key order: still the same item
        key = next(iter(value))
        out.append({k: v for k, v in value.items() if k != key})
        out.append({**value, key: _variants(value[key])[-1]})
    elif isinstance(value, list):
        out += [value[:-1], [*value, value[-1] if value else 0]]
    return out


def _all_items(state: dict[str, Any]) -> list[Any]:
    return [item for act in state["activations"].values() for item in act["items"]]


Tamper = Callable[[st.DataObject, dict[str, Any]], str]


def _frame(data: st.DataObject, state: dict[str, Any], *, item: bool = True) -> tuple[str, dict[str, Any]]:
    choices = (_item_frames(state) if item else []) or list(state["frames"])
    fid = data.draw(st.sampled_from(sorted(choices)), label="frame")
    return fid, state["frames"][fid]


def drop_metadata(data: st.DataObject, state: dict[str, Any]) -> str:
    fid, frame = _frame(data, state)
    frame["metadata"].pop("foreach", None)
    return f"{fid}: metadata.foreach removed"


def replace_metadata(data: st.DataObject, state: dict[str, Any]) -> str:
    fid, frame = _frame(data, state, item=data.draw(st.booleans()))
    if data.draw(st.booleans()):
        others = [f["metadata"]["foreach"] for f in state["frames"].values() if "foreach" in f["metadata"]]
        value = copy.deepcopy(data.draw(st.sampled_from(others))) if others else None
    else:
        value = data.draw(JSON_ODDITIES)
    frame["metadata"]["foreach"] = value
    return f"{fid}: metadata.foreach = {value!r}"


def extra_metadata(data: st.DataObject, state: dict[str, Any]) -> str:
    fid, frame = _frame(data, state, item=data.draw(st.booleans()))
    if data.draw(st.booleans()) and "foreach" in frame["metadata"]:
        frame["metadata"]["foreach"]["extra"] = 1
        return f"{fid}: metadata.foreach.extra"
    frame["metadata"]["note"] = data.draw(JSON_ODDITIES)
    return f"{fid}: metadata.note"


def meta_field(data: st.DataObject, state: dict[str, Any]) -> str:
    fid, frame = _frame(data, state)
    meta = frame["metadata"].get("foreach")
    if not isinstance(meta, dict):
        return "no item frame"
    key = data.draw(st.sampled_from(["node_id", "activation_id", "index", "item", "alias"]), label="key")
    if data.draw(st.integers(0, 5)) == 0:
        del meta[key]
        return f"{fid}: metadata.foreach.{key} removed"
    candidates: list[Any] = {
        "node_id": ["customers", "orders", "seen", "ask", ""],
        "activation_id": [*state["activations"], "act_9999999999999", ""],
        "index": [*range(-1, 5), *_variants(meta["index"])],
        "item": [*_all_items(state), *_variants(meta["item"])],
        "alias": [None, "customer", "order", "order_line", "", 3],
    }[key]
    value = data.draw(st.one_of(st.sampled_from(_variants(meta[key])), st.sampled_from(candidates), JSON_ODDITIES),
                      label="value")
    meta[key] = copy.deepcopy(value)
    return f"{fid}: metadata.foreach.{key} = {value!r}"


def frame_field(data: st.DataObject, state: dict[str, Any]) -> str:
    fid, frame = _frame(data, state, item=data.draw(st.booleans()))
    key = data.draw(st.sampled_from(["parent_frame_id", "lineage_id", "scope_id"]), label="key")
    pools = {"parent_frame_id": [*state["frames"], None, "frame_9999999999999"],
             "lineage_id": [*state["lineages"], "lineage_9999999999999"],
             "scope_id": [*state["scopes"], "scope_9999999999999"]}
    value = data.draw(st.sampled_from(pools[key]), label="value")
    frame[key] = value
    return f"{fid}: {key} = {value!r}"


def cut_or_cycle(data: st.DataObject, state: dict[str, Any]) -> str:
    """Point an ancestor's parent at one of its descendants (a cycle), or cut the chain in the middle."""
    fid, frame = _frame(data, state)
    chain = []
    current = frame.get("parent_frame_id")
    while current in state["frames"] and current not in chain:
        chain.append(current)
        current = state["frames"][current].get("parent_frame_id")
    if not chain:
        return "no ancestor"
    ancestor = data.draw(st.sampled_from(chain), label="ancestor")
    state["frames"][ancestor]["parent_frame_id"] = fid if data.draw(st.booleans()) else None
    return f"{ancestor}: parent_frame_id re-pointed below it ({fid}) or cut"


def lineage_field(data: st.DataObject, state: dict[str, Any]) -> str:
    fid, frame = _frame(data, state, item=data.draw(st.booleans()))
    lineage = state["lineages"].get(frame["lineage_id"])
    if lineage is None:
        return "no lineage"
    if data.draw(st.booleans()):
        lineage["kind"] = data.draw(st.sampled_from(["root", "item", "subgraph"]))
        return f"{fid}: lineage kind {lineage['kind']}"
    key = data.draw(st.sampled_from(["parent_lineage_id", "frame_id", "scope_id"]))
    pool = {"parent_lineage_id": [*state["lineages"], None], "frame_id": list(state["frames"]),
            "scope_id": list(state["scopes"])}[key]
    lineage[key] = data.draw(st.sampled_from(pool))
    return f"{fid}: lineage {key} = {lineage[key]!r}"


def running_list(data: st.DataObject, state: dict[str, Any]) -> str:
    if not state["activations"]:
        return "no activation"
    aid = data.draw(st.sampled_from(sorted(state["activations"])), label="activation")
    running: list[str] = state["activations"][aid]["running"]
    how = data.draw(st.sampled_from(["remove", "duplicate", "add", "reverse", "clear", "swap"]))
    if how == "remove" and running:
        running.pop(data.draw(st.integers(0, len(running) - 1)))
    elif how == "duplicate" and running:
        running.append(running[0])
    elif how == "add":
        running.append(data.draw(st.sampled_from([*state["frames"], "frame_9999999999999"])))
    elif how == "reverse":
        running.reverse()
    elif how == "clear":
        running.clear()
    elif how == "swap":
        others = [a for a in state["activations"] if a != aid and state["activations"][a]["running"]]
        if others and running:
            other = state["activations"][data.draw(st.sampled_from(others))]["running"]
            running[0], other[0] = other[0], running[0]
    return f"{aid}: running {how}"


def activation_field(data: st.DataObject, state: dict[str, Any]) -> str:
    if not state["activations"]:
        return "no activation"
    aid = data.draw(st.sampled_from(sorted(state["activations"])), label="activation")
    activation = state["activations"][aid]
    key = data.draw(st.sampled_from(["alias", "frame_id", "node_id", "next_index", "completed", "scope_id"]))
    pool: list[Any] = {
        "alias": [None, "customer", "order", "order_line"],
        "frame_id": list(state["frames"]),
        "node_id": ["customers", "orders", "seen"],
        "next_index": list(range(0, 5)),
        "completed": list(range(0, 4)),
        "scope_id": list(state["scopes"]),
    }[key]
    activation[key] = data.draw(st.sampled_from(pool))
    return f"{aid}: {key} = {activation[key]!r}"


# Metadata fields are where a loose check would let a changed value through: drawn more often.
TAMPERS: list[Tamper] = [drop_metadata, replace_metadata, extra_metadata, meta_field, meta_field, meta_field,
                         frame_field, cut_or_cycle, lineage_field, running_list, activation_field]


def _carry_on(case: Case, state: Any) -> str:
    engine = _engine(case)
    return _outcome(_finish(engine, case, engine.continue_run(parse_run_state(state), workflow=case.workflow)))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=st.sampled_from([c.name for c in CASES]), tamper=st.sampled_from(TAMPERS))
def test_a_tampered_checkpoint_resumes_identically_or_is_corrupt(data: st.DataObject, case: str,
                                                                 tamper: Tamper) -> None:
    saved = [entry for entry in checkpoints(case) if json.loads(entry[0])["frames"]]  # a finished run has none
    checkpoint, expected, inspected = saved[data.draw(st.integers(0, len(saved) - 1), label="checkpoint")]
    state = json.loads(checkpoint)
    what = tamper(data, state)
    spec = next(c for c in CASES if c.name == case)
    try:
        outcome = _carry_on(spec, state)
    except CorruptRunStateError as exc:
        assert exc.code == "runstate.corrupt" and exc.details, what
        # Inspection refuses the same state: the designer never shows it as something else.
        with pytest.raises(CorruptRunStateError):
            _inspected(state)
        return
    assert outcome == expected, what
    assert _inspected(state) == inspected, what


# --- the failures the issue reported, and the load paths ----------------------------------------------------------


def _interrupted(case_name: str = "nested-interrupts") -> tuple[dict[str, Any], str]:
    """A checkpoint paused at an interrupt inside an inner item, and that item frame."""
    for checkpoint, _, _ in checkpoints(case_name):
        state = json.loads(checkpoint)
        if state["status"] == "interrupted":
            record = next(iter(state["interrupts"].values()))
            return state, record["frame_id"]
    raise AssertionError("no interrupted checkpoint")


@pytest.mark.parametrize("change", ["missing", "null", "cut", "repointed", "unknown_lineage", "item_differs",
                                    "alias_differs", "not_running"])
def test_reported_corruptions_name_frame_and_field(change: str) -> None:
    state, fid = _interrupted()
    frame = state["frames"][fid]
    meta = frame["metadata"]["foreach"]
    field = {"missing": "metadata.foreach", "null": "metadata.foreach", "cut": "parent_frame_id",
             "repointed": "parent_frame_id", "unknown_lineage": "lineage_id", "item_differs": "metadata.foreach.item",
             "alias_differs": "metadata.foreach.alias", "not_running": "running"}[change]
    if change == "missing":
        del frame["metadata"]["foreach"]
    elif change == "null":
        frame["metadata"]["foreach"] = None
    elif change == "cut":
        frame["parent_frame_id"] = None
    elif change == "repointed":
        frame["parent_frame_id"] = state["scopes"]["root"]["root_frame_id"]
    elif change == "unknown_lineage":
        frame["lineage_id"] = "lineage_9999999999999"
    elif change == "item_differs":
        meta["item"] = float(meta["item"])
    elif change == "alias_differs":
        meta["alias"] = None
    elif change == "not_running":
        state["activations"][meta["activation_id"]]["running"].remove(fid)
    with pytest.raises(CorruptRunStateError) as caught:
        RunState.from_json(state)
    assert caught.value.details["field"] == field
    assert fid in caught.value.message or caught.value.details.get("activation_id")


def test_every_load_path_checks_the_state(tmp_path: Any) -> None:
    state, fid = _interrupted()
    del state["frames"][fid]["metadata"]["foreach"]
    case = CASES[0]
    # A RunState object a caller built or altered is checked as much as JSON is.
    intact = RunState.from_json(_interrupted()[0])
    intact.frames[fid].metadata.pop("foreach")
    interrupt_id = next(iter(state["interrupts"]))
    for text in (state, json.dumps(state)):
        with pytest.raises(CorruptRunStateError):
            parse_run_state(text)
    for given_state in (RunState.model_validate(state), intact):
        with pytest.raises(CorruptRunStateError):
            _engine(case).continue_run(given_state, workflow=case.workflow)
        with pytest.raises(CorruptRunStateError):
            _engine(case).resume(given_state, interrupt_id, {"answer": "yes"}, workflow=case.workflow)
        with pytest.raises(CorruptRunStateError):
            frame_context(given_state, fid)
        with pytest.raises(CorruptRunStateError):
            activation_progress(given_state)
        with pytest.raises(CorruptRunStateError):
            live_frames(given_state)
    files = FileCheckpointer(tmp_path)
    record = {"state": state, "new": {}, "gone": [], "events": []}
    files.log_path(state["run_id"]).write_text(json.dumps(record) + "\n")
    with pytest.raises(CorruptRunStateError):
        files.load(state["run_id"])
    memory = InMemoryCheckpointer()
    memory.save(intact)  # saving is the engine's business; loading is where state comes from outside
    with pytest.raises(CorruptRunStateError):
        memory.load(intact.run_id)


def test_null_item_metadata_is_corrupt_not_an_ordinary_frame() -> None:
    rs = RunState.from_json(_interrupted()[0])
    frame = next(f for f in rs.frames.values() if "foreach" in f.metadata)
    frame.metadata["foreach"] = None
    with pytest.raises(CorruptRunStateError):
        foreach_item_metadata(rs, frame)


def test_sequential_items_pin_the_running_index_even_when_items_repeat() -> None:
    """With one item at a time the running item is always the latest started, so equal items cannot be swapped."""
    case = Case("repeats", nested_capture(interrupt=True), {}, {"customers": [{"name": "Ada", "orders": [5, 5, 5]}]})
    engine = _engine(case)
    result = engine.run(case.workflow, case.run_input)
    result = engine.resume(result.run_state, result.interrupts[0].interrupt_id, {"answer": "yes"},
                           workflow=case.workflow)
    state = json.loads(result.run_state.model_dump_json())
    item = next(f for f in state["frames"].values() if f["metadata"].get("foreach", {}).get("node_id") == "orders")
    assert item["metadata"]["foreach"]["index"] == 1
    item["metadata"]["foreach"]["index"] = 0
    with pytest.raises(CorruptRunStateError) as caught:
        RunState.from_json(state)
    assert caught.value.details["field"] == "metadata.foreach.index"


def _near_misses(state: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(frame, metadata field, value) for every value a loose check could take for the real one."""
    found = []
    for fid in _item_frames(state):
        meta = state["frames"][fid]["metadata"]["foreach"]
        for key, values in (("index", _variants(meta["index"])[1:] + [meta["index"] - 1]),
                            ("item", _variants(meta["item"])[1:]),
                            ("alias", [None, "", "order" if meta["alias"] != "order" else "customer"]),
                            ("node_id", ["orders" if meta["node_id"] != "orders" else "customers"]),
                            ("activation_id", [a for a in state["activations"] if a != meta["activation_id"]])):
            found += [(fid, key, value) for value in values]
    return found


@pytest.mark.parametrize("name", ["nested-wide", "nested-sequential"])
def test_every_near_miss_of_every_item_field_resumes_identically_or_is_corrupt(name: str) -> None:
    """Hypothesis samples; this walks every checkpoint of two real runs and every close value of each field."""
    case = next(c for c in CASES if c.name == name)
    tried, accepted = 0, []
    for checkpoint, expected, _ in checkpoints(name):
        for fid, key, value in _near_misses(json.loads(checkpoint)):
            state = json.loads(checkpoint)
            original = state["frames"][fid]["metadata"]["foreach"][key]
            state["frames"][fid]["metadata"]["foreach"][key] = value
            tried += 1
            try:
                outcome = _carry_on(case, state)
            except CorruptRunStateError:
                continue
            assert outcome == expected, (fid, key, value)
            accepted.append((original, value))
    assert tried > 100
    # The one change let through: an object item with its keys in another order, which is the same JSON value.
    assert accepted and all(isinstance(value, dict) and value == original for original, value in accepted)
