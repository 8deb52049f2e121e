"""``run_summary`` reads status, counters and foreach progress without the integrity check: on every state the
runtime writes it answers exactly what the full parse answers, and what it reads, it refuses when malformed."""

from __future__ import annotations

import copy
import functools
import json
from typing import Any, get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime import RunState
from runtime._state import RunStatus
from runtime._summary import RUN_STATUSES
from runtime.errors import CorruptRunStateError
from runtime.inspect import RunSummary, activation_progress, run_summary
from tests.runtime import test_foreach_distributed as distributed
from tests.runtime.test_run_state_integrity import CASES, JSON_ODDITIES, TAMPERS, checkpoints


def reference(state: Any) -> RunSummary:
    """The same facts through the full parse and the checked inspection helper."""
    rs = state if isinstance(state, RunState) else RunState.from_json(state)
    rs.check()
    return RunSummary(run_id=rs.run_id, status=rs.status, step=rs.step, trace_seq=rs.trace_seq, attempt=rs.attempt,
                      frames=len(rs.frames), activations=len(rs.activations),
                      distributed=tuple(key for key, a in rs.activations.items() if a.distributed),
                      foreach=tuple(activation_progress(rs)))


@functools.cache
def valid_states() -> tuple[str, ...]:
    """Checkpoints real runs wrote at every superstep (nested items, interrupts, child scopes, a finished run),
    and a run waiting for the batches of a distributed foreach."""
    saved = [checkpoint for case in CASES for checkpoint, _, _ in checkpoints(case.name)]
    waiting = distributed.engine(distribute=True).run(distributed.nested(), {"customers": distributed.CUSTOMERS})
    assert waiting.status == "waiting"
    return (*saved, waiting.run_state.to_json())


def test_the_statuses_are_the_run_states() -> None:
    assert frozenset(get_args(RunStatus)) == RUN_STATUSES


def test_the_states_cover_what_the_callers_ask_about() -> None:
    summaries = [run_summary(state) for state in valid_states()]
    assert {s.status for s in summaries} >= {"running", "interrupted", "waiting", "completed"}
    assert any(s.distributed for s in summaries)
    assert any(row.parent_activation_id is not None for s in summaries for row in s.foreach)


def test_every_written_state_reads_as_the_full_parse_reads_it() -> None:
    for state in valid_states():
        expected = reference(state)
        assert run_summary(state) == expected
        assert run_summary(state.encode()) == expected
        assert run_summary(json.loads(state)) == expected
        assert run_summary(RunState.from_json(state)) == expected  # the engine's own object, read in place


def test_the_limit_caps_the_rows_but_not_the_counts() -> None:
    state = next(s for s in valid_states() if len(json.loads(s)["activations"]) >= 2)
    full = run_summary(state)
    capped = run_summary(state, foreach_limit=1)
    assert capped.foreach == full.foreach[:1] and capped.activations == full.activations >= 2
    assert run_summary(state, foreach_limit=0).foreach == ()


def _fields_read(state: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Paths of every value ``run_summary`` reads in ``state``."""
    paths: list[tuple[Any, ...]] = [(key,) for key in ("version", "run_id", "status", "step", "trace_seq", "attempt",
                                                       "frames", "activations")]
    for key, activation in state["activations"].items():
        paths.append(("activations", key))
        paths.extend(("activations", key, field) for field in ("activation_id", "node_id", "scope_id", "frame_id",
                                                               "items", "completed", "running", "batch_size"))
        frame = state["frames"].get(activation["frame_id"])
        if frame is not None:
            where = ("frames", activation["frame_id"])
            paths += [where, (*where, "metadata")]
            if "foreach" in frame["metadata"]:
                paths += [(*where, "metadata", "foreach")] + [(*where, "metadata", "foreach", field)
                                                              for field in ("activation_id", "index")]
    return paths


def _canonical(state: dict[str, Any]) -> bool:
    """Whether ``state`` is in the form the runtime writes (the full parse also accepts e.g. ``"3"`` for 3)."""
    written = json.loads(RunState.model_validate(state).to_json())
    return json.dumps(written, sort_keys=True) == json.dumps(state, sort_keys=True)  # as JSON: False is not 0


def _agrees(state: Any, what: str) -> None:
    """Either both reads give the same answer, or ``run_summary`` refuses with a structured error naming a field;
    it never answers differently, and never refuses a state in the form the runtime writes."""
    try:
        expected: RunSummary | None = reference(state)
    except CorruptRunStateError:
        expected = None
    try:
        got = run_summary(state)
    except CorruptRunStateError as exc:
        assert exc.code == "runstate.corrupt" and isinstance(exc.details.get("field"), str), what
        assert expected is None or not _canonical(state), f"{what}: refused a valid state: {exc.message}"
        return
    assert expected is None or got == expected, what


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_field_it_reads_changed_or_removed_is_read_alike_or_refused(data: st.DataObject) -> None:
    states = valid_states()
    state = json.loads(states[data.draw(st.integers(0, len(states) - 1), label="state")])
    path = data.draw(st.sampled_from(_fields_read(state)), label="path")
    parent = functools.reduce(lambda entry, key: entry[key], path[:-1], state)
    if data.draw(st.booleans(), label="remove"):
        parent.pop(path[-1], None)
    else:
        parent[path[-1]] = data.draw(JSON_ODDITIES, label="value")
    _agrees(state, f"{path} in {json.dumps(state)[:200]}")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=st.sampled_from([c.name for c in CASES]), tamper=st.sampled_from(TAMPERS))
def test_the_integrity_tampering_cases_are_read_alike_or_refused(data: st.DataObject, case: str, tamper: Any) -> None:
    saved = [entry for entry in checkpoints(case) if json.loads(entry[0])["frames"]]
    state = json.loads(saved[data.draw(st.integers(0, len(saved) - 1), label="checkpoint")][0])
    _agrees(state, tamper(data, state))


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=12)


@given(garbage=JSON | st.binary(max_size=20) | st.text(max_size=20))
def test_garbage_is_a_structured_error_never_a_crash(garbage: Any) -> None:
    with pytest.raises(CorruptRunStateError) as caught:
        run_summary(garbage)
    assert caught.value.code == "runstate.corrupt" and "field" in caught.value.details


@pytest.mark.parametrize(("change", "field", "words"), [
    (lambda s: s.update(status="paused"), "status", "must be one of"),
    (lambda s: s.update(version=True), "version", "must be the integer 1"),
    (lambda s: s.update(step="3"), "step", "must be an integer, got string"),
    (lambda s: s.pop("run_id"), "run_id", "is missing"),
    (lambda s: s.update(activations=[]), "activations", "must be an object, got array"),
    (lambda s: s["activations"]["act_2"].update(items={}), "activations.act_2.items", "must be an array"),
    (lambda s: s["activations"]["act_2"].update(completed=-1), "activations.act_2.completed", "at least 0"),
    (lambda s: s["activations"]["act_2"].update(frame_id="nowhere"), "activations.act_2.frame_id",
     "names frame 'nowhere', which does not exist"),
])
def test_the_error_names_the_field_and_what_is_wrong(change: Any, field: str, words: str) -> None:
    state = copy.deepcopy(json.loads(valid_states()[0]))
    state["activations"].setdefault("act_2", {"activation_id": "act_2", "node_id": "n", "scope_id": "root",
                                              "frame_id": next(iter(state["frames"]))})
    change(state)
    with pytest.raises(CorruptRunStateError) as caught:
        run_summary(state)
    assert caught.value.details["field"] == field and words in caught.value.message, caught.value.message
