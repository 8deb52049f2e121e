"""The designer's checkpointer stores a foreach's tolerated failures in write-once chunks (``RunStatePart``), not
in ``Run.run_state`` at every save, and a run stored with every failure inline resumes after the upgrade."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from designer.models import Run, RunStatePart
from designer.runs.checkpointer import OrmCheckpointer, run_state_of
from runtime import Engine, RunState
from runtime._parts import CHUNK
from runtime.engine import EngineOptions
from runtime.errors import CorruptRunStateError
from runtime.state import SequentialIds
from tests.designer.runs.test_orm_checkpointer import checkpointer_for, fresh_team
from tests.runtime.test_failed_chunks import failing, failures_named, tasks

pytestmark = pytest.mark.django_db

ITEMS = 4 * CHUNK


def failed_parts(run: Run) -> dict[str, int]:
    return dict(RunStatePart.objects.filter(run=run, key__startswith="list:failed.").values_list("key", "pk"))


def test_failed_chunks_are_inserted_once_and_the_run_resumes_from_them() -> None:
    team, workflow_row = fresh_team()
    seen: list[dict[str, int]] = []
    columns: list[dict[str, Any]] = []

    class Watching(OrmCheckpointer):
        def save(self, run_state: RunState, events: Any = ()) -> None:
            super().save(run_state, events)
            run = Run.objects.get(team=team, runtime_id=run_state.run_id)
            seen.append(failed_parts(run))
            columns.append(run.run_state)

    def create_run(run_state: RunState) -> Run:
        return Run.objects.create(team=team, workflow=workflow_row, document={}, runtime_id=run_state.run_id)

    workflow = failing(ITEMS, interrupt_at=3 * CHUNK, tolerated=2 * CHUNK - 1)
    eng = Engine(registry=tasks(), options=EngineOptions(checkpointer=Watching(team, create_run=create_run),
                                                         ids=SequentialIds()))
    paused = eng.run(workflow, {"xs": list(range(ITEMS))})
    assert paused.status == "interrupted"
    # 3 * CHUNK items done: 1.5 chunks of failures; chunk 0 was inserted once and kept its row from then on
    assert list(seen[-1]) == [key for key in seen[-1] if key.endswith(":0")] and len(seen[-1]) == 1
    first = next(n for n, parts in enumerate(seen) if parts)
    assert all(parts == seen[-1] for parts in seen[first:])
    (activation,) = columns[-1]["activations"].values()
    assert "failed" not in activation and activation["failed_parts"]["length"] == 3 * CHUNK // 2
    assert len(activation["failed_parts"]["tail"]) == 3 * CHUNK // 2 - CHUNK
    run = Run.objects.get(team=team, runtime_id=paused.run_id)
    complete = run_state_of(run)
    assert complete is not None
    (joined,) = complete["activations"].values()
    assert [entry["index"] for entry in joined["failed"]] == list(range(1, 3 * CHUNK, 2))

    failures_named(eng.resume(OrmCheckpointer(team).load(paused.run_id), paused.interrupts[0].interrupt_id, {},
                              workflow=workflow), ITEMS)


def test_a_lost_failed_chunk_makes_the_checkpoint_corrupt_naming_it() -> None:
    team, workflow_row = fresh_team()
    workflow = failing(ITEMS, interrupt_at=3 * CHUNK)
    eng = Engine(registry=tasks(), options=EngineOptions(checkpointer=checkpointer_for(team, workflow_row),
                                                         ids=SequentialIds()))
    paused = eng.run(workflow, {"xs": list(range(ITEMS))})
    run = Run.objects.get(team=team, runtime_id=paused.run_id)
    (key,) = failed_parts(run)
    RunStatePart.objects.filter(run=run, key=key).delete()
    with pytest.raises(CorruptRunStateError) as caught:
        OrmCheckpointer(team).load(paused.run_id)
    assert caught.value.details["part"] == key


def test_a_run_stored_with_its_failures_inline_resumes_after_the_upgrade() -> None:
    team, workflow_row = fresh_team()
    workflow = failing(ITEMS, interrupt_at=3 * CHUNK, tolerated=2 * CHUNK - 1)
    paused = Engine(registry=tasks(), options=EngineOptions(ids=SequentialIds())).run(
        workflow, {"xs": list(range(ITEMS))})
    assert paused.run_state is not None
    data = copy.deepcopy(paused.run_state.model_dump(mode="json"))
    (activation,) = data["activations"].values()
    # the old form, written out: every failure inline, no failed_parts
    activation["failed"] = [{"index": x, "error": dict(activation["failed"][n]["error"], message=f"item {x} is odd")}
                            for n, x in enumerate(range(1, 3 * CHUNK, 2))]
    run = Run.objects.create(team=team, workflow=workflow_row, document={}, runtime_id=paused.run_id, run_state=data)
    loaded = OrmCheckpointer(team).load(paused.run_id)
    assert len(next(iter(loaded.activations.values())).failed) == 3 * CHUNK // 2
    eng = Engine(registry=tasks(), options=EngineOptions(checkpointer=OrmCheckpointer(team), ids=SequentialIds()))
    failures_named(eng.resume(loaded, paused.interrupts[0].interrupt_id, {}, workflow=workflow), ITEMS)
    run.refresh_from_db()
    assert run.run_state["status"] == "failed"
