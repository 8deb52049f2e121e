"""TraceEvent's own constructor: it writes each slot through its descriptor, so it must stay in step with the
dataclass fields (a field added without a parameter, or parameters in another order, fails here)."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import pytest

from runtime.state import TraceEvent

FIELDS = dataclasses.fields(TraceEvent)


def distinct_values() -> dict[str, object]:
    """A different value for every field, so a value written to the wrong slot shows."""
    return {f.name: (f"value-{position}" if f.name != "summary" else {"position": position})
            for position, f in enumerate(FIELDS)}


def test_the_constructor_takes_the_fields_in_order_with_their_defaults() -> None:
    parameters = list(inspect.signature(TraceEvent.__init__).parameters.values())[1:]
    assert [p.name for p in parameters] == [f.name for f in FIELDS]
    for parameter, f in zip(parameters, FIELDS, strict=True):
        expected = inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default
        assert parameter.default == expected, f.name


def test_every_field_lands_in_its_own_slot_by_position_and_by_name() -> None:
    values = distinct_values()
    by_position = TraceEvent(*values.values())  # type: ignore[arg-type]
    by_name = TraceEvent(**values)  # type: ignore[arg-type]
    assert by_position.to_dict() == by_name.to_dict() == values
    assert by_position == by_name and hash(TraceEvent(1, "k", "r", 2, 0.5)) == hash(TraceEvent(1, "k", "r", 2, 0.5))


def test_defaults_are_filled_in_and_the_event_stays_frozen() -> None:
    event = TraceEvent(3, "node_started", "run", 1, 0.25)
    assert event.to_dict() == {"seq": 3, "kind": "node_started", "run_id": "run", "step": 1, "time": 0.25} | {
        f.name: None for f in FIELDS[5:]}
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.seq = 4  # type: ignore[misc]
    assert dataclasses.replace(event, seq=9).seq == 9 and event.seq == 3
    assert pickle.loads(pickle.dumps(event)) == event
    with pytest.raises(TypeError):
        TraceEvent(3, "node_started", "run")  # type: ignore[call-arg]


def test_the_recorder_builds_events_exactly_as_the_constructor_does() -> None:
    """``Recorder.emit`` fills the event's layout twin itself (no factory call): every field must land in its own
    slot, for a run-level event and for an item frame's (whose activation and index come from its metadata)."""
    from runtime._algo import Recorder
    from runtime._state import ExecutionFrame, new_run_state
    from runtime.document import WorkflowRef

    rs = new_run_state("run_1", WorkflowRef(id="w"))
    rs.step, rs.trace_seq = 7, 40
    recorder = Recorder(rs, clock=lambda: 12.5)
    frame = ExecutionFrame(frame_id="frame_1", scope_id="root", lineage_id="lineage_2", node_id="body",
                           metadata={"foreach": {"activation_id": "act_3", "index": 4}})
    recorder.emit("node_completed", frame, label="ok", attempt=2, duration=0.25, summary={"x": 1})
    recorder.emit("run_completed", summary=[1])
    first, second = recorder.take_step()
    assert type(first) is TraceEvent and type(second) is TraceEvent
    assert first == TraceEvent(40, "node_completed", "run_1", 7, 12.5, "root", "frame_1", "lineage_2", "body", "act_3",
                               4, "ok", 2, 0.25, {"x": 1})
    assert second == TraceEvent(41, "run_completed", "run_1", 7, 12.5, "root", summary=[1])
    assert dataclasses.replace(first, summary=None) == TraceEvent(*[getattr(first, f.name) for f in FIELDS][:-1])
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.seq = 1  # type: ignore[misc]
