"""Interrupts: pausing, records per paused frame, validated resumes with labels, and continuing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from runtime import RunState, WorkflowBuilder
from runtime.checkpoint import InMemoryCheckpointer
from runtime.errors import ResumeError
from runtime.inspect import check_resume
from runtime.paths import input_path, state_path
from runtime.state import parse_run_state
from tests.runtime.engine_helpers import ANY_LIST, ITEMS, engine, json_round_trip

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}},
            "required": ["approved"]}


def approval(*, concurrency: int = 1) -> Any:
    g = WorkflowBuilder("approval", input_schema={"type": "object", "properties": {"amounts": ITEMS}},
                        state_schema={"type": "object", "properties": {"decisions": ANY_LIST,
                                                                       "escalated": ANY_LIST}})
    each = g.foreach("each", input_path("amounts"), as_="amount", max_concurrency=concurrency)
    ask = g.interrupt("ask", prompt="Approve this amount?", resume_schema=APPROVAL, labels=["ok", "escalate"],
                      input=[{"target": "amount", "path": each.item}],
                      output=[{"source": ".", "target": "decisions", "mode": "append"}])
    esc = g.use("echo", id="esc", input=[{"target": "value", "path": each.item}],
                output=[{"source": ".", "target": "escalated", "mode": "append"}])
    g.chain(each, "loop", ask, "ok", each)
    g.chain(ask, "escalate", esc, "ok", each)
    g.output("decisions", state_path("decisions"))
    return g.build()


def test_run_pauses_with_one_record_per_interrupted_frame() -> None:
    result = engine().run(approval(), {"amounts": [10, 20]})
    assert result.status == "interrupted"
    assert result.output is None
    (record,) = result.interrupts
    assert record.node_id == "ask" and record.prompt == "Approve this amount?"
    assert record.payload == {"amount": 10}
    assert record.resume_schema == APPROVAL and record.labels == ["ok", "escalate"]
    frame = result.run_state.frames[record.frame_id]
    assert frame.status == "interrupted" and frame.waiting_for == record.interrupt_id
    assert record.interrupt_id.startswith("int_")
    assert [e.kind for e in result.trace][-2:] == ["interrupted", "run_interrupted"]


def test_concurrent_items_pause_together_and_resume_in_any_order() -> None:
    workflow = approval(concurrency=3)
    eng = engine()
    result = eng.run(workflow, {"amounts": [10, 20, 30]})
    assert [i.payload for i in result.interrupts] == [{"amount": 10}, {"amount": 20}, {"amount": 30}]
    assert len({i.frame_id for i in result.interrupts}) == 3
    last, middle, first = reversed(result.interrupts)
    result = eng.resume(result.run_state, last.interrupt_id, {"approved": True})
    assert result.status == "interrupted"
    assert [i.interrupt_id for i in result.interrupts] == [first.interrupt_id, middle.interrupt_id]
    result = eng.resume(result.run_state, first.interrupt_id, {"approved": False})
    result = eng.resume(result.run_state, middle.interrupt_id, {"approved": True, "note": "fine"})
    assert result.status == "completed"
    assert result.output == {"decisions": [{"approved": True}, {"approved": False},
                                           {"approved": True, "note": "fine"}]}


def test_resume_label_chooses_the_route() -> None:
    workflow = approval()
    eng = engine()
    result = eng.run(workflow, {"amounts": [10, 99]})
    result = eng.resume(result.run_state, result.interrupts[0].interrupt_id, {"approved": True})
    result = eng.resume(result.run_state, result.interrupts[0].interrupt_id, {"approved": False}, label="escalate")
    assert result.status == "completed"
    assert result.state["escalated"] == [99]
    assert [e.label for e in result.trace if e.kind == "resumed"] == ["escalate"]


@pytest.mark.parametrize(("value", "label", "field"), [
    ({"approved": "yes"}, None, "approved"),
    ({}, None, ""),
    ("not an object", None, ""),
    ({"approved": True}, "reject", "label"),
])
def test_bad_resume_values_and_labels_are_refused_without_touching_the_state(value: Any, label: str | None,
                                                                            field: str) -> None:
    cp = InMemoryCheckpointer()
    eng = engine(checkpointer=cp)
    result = eng.run(approval(), {"amounts": [10]})
    before = result.run_state.model_dump(mode="json")
    saves = cp.saves
    interrupt_id = result.interrupts[0].interrupt_id
    with pytest.raises(ResumeError) as caught:
        eng.resume(result.run_state, interrupt_id, value, label=label)
    assert caught.value.code == "resume.invalid"
    assert caught.value.details["errors"][0]["field"] == field
    with pytest.raises(ResumeError):
        check_resume(result.run_state, interrupt_id, value, label)
    assert result.run_state.model_dump(mode="json") == before
    assert cp.saves == saves


def test_resume_of_unknown_interrupt_or_finished_run_is_refused() -> None:
    eng = engine()
    result = eng.run(approval(), {"amounts": [10]})
    with pytest.raises(ResumeError) as caught:
        eng.resume(result.run_state, "int_0000000000099", {"approved": True})
    assert caught.value.details["open"] == [result.interrupts[0].interrupt_id]
    done = eng.resume(result.run_state, result.interrupts[0].interrupt_id, {"approved": True})
    assert done.status == "completed"
    with pytest.raises(ResumeError):
        eng.resume(done.run_state, result.interrupts[0].interrupt_id, {"approved": True})


def test_resume_never_mutates_the_given_state_and_can_branch_from_it() -> None:
    eng = engine()
    paused = eng.run(approval(), {"amounts": [10]})
    snapshot = paused.run_state.model_dump(mode="json")
    interrupt_id = paused.interrupts[0].interrupt_id
    yes = eng.resume(paused.run_state, interrupt_id, {"approved": True})
    no = eng.resume(paused.run_state, interrupt_id, {"approved": False})
    assert paused.run_state.model_dump(mode="json") == snapshot
    assert yes.output == {"decisions": [{"approved": True}]}
    assert no.output == {"decisions": [{"approved": False}]}


def test_resume_takes_a_run_state_parsed_from_json_text_or_dicts() -> None:
    eng = engine()
    paused = eng.run(approval(), {"amounts": [10]})
    interrupt_id = paused.interrupts[0].interrupt_id
    for form in (paused.run_state.model_dump_json(), paused.run_state.model_dump(mode="json"),
                 json_round_trip(paused.run_state)):
        assert eng.resume(parse_run_state(form), interrupt_id, {"approved": True}).status == "completed"
        if not isinstance(form, RunState):
            with pytest.raises(TypeError, match="Engine.resume takes a RunState, not .*parse_run_state"):
                eng.resume(form, interrupt_id, {"approved": True})  # type: ignore[arg-type]


def test_trace_sequence_continues_across_resumes() -> None:
    cp = InMemoryCheckpointer()
    eng = engine(checkpointer=cp)
    first = eng.run(approval(), {"amounts": [10]})
    second = eng.resume(first.run_state, first.interrupts[0].interrupt_id, {"approved": True})
    assert second.trace[0].seq == first.trace[-1].seq + 1
    assert [e.kind for e in second.trace][:2] == ["resumed", "node_completed"]
    assert [e.seq for e in cp.load_events(first.run_id)] == list(range(len(first.trace) + len(second.trace)))
    assert cp.load(first.run_id).status == "completed"


def test_resume_is_checkpointed_before_the_run_continues() -> None:
    states: list[str] = []
    eng = engine(on_superstep=lambda rs, events: states.append(f"{rs.status}:{events[0].kind}"))
    paused = eng.run(approval(), {"amounts": [10, 20]})
    states.clear()
    eng.resume(paused.run_state, paused.interrupts[0].interrupt_id, {"approved": True})
    assert states[0] == "running:resumed"


def test_async_resume() -> None:
    eng = engine()

    async def go() -> Any:
        paused = await eng.arun(approval(), {"amounts": [10]})
        return await eng.aresume(paused.run_state, paused.interrupts[0].interrupt_id, {"approved": True})

    assert asyncio.run(go()).output == {"decisions": [{"approved": True}]}
