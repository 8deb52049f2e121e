"""``append_events`` writes trace events with one multi-row INSERT, or COPY for many (PostgreSQL), or ``executemany``
(SQLite) instead of
``bulk_create``: the rows it stores are the ones the ORM stores for ``event_row``, column for column, and read back
as the same events."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

from designer.models import Run, RunCheckpoint, RunEvent, Team, Workflow
from designer.runs.checkpointer import COPY_ABOVE, _keep_checkpoint, append_events, event_row, trace_event
from runtime.state import TraceEvent
from runtime.testing.checkpointer_conformance import sample_run_state

pytestmark = pytest.mark.django_db

COLUMNS = ("seq", "kind", "node_id", "frame_id", "scope_id", "lineage_id", "activation_id", "index", "data", "at",
           "duration_ms")


def _run(name: str) -> Run:
    team = Team.objects.create(name=name, slug=name.lower())
    workflow = Workflow.objects.create(team=team, slug="w", name="W")
    return Run.objects.create(team=team, workflow=workflow, document={}, runtime_id=f"run_{name}")


def _events(run_id: str) -> list[TraceEvent]:
    # Every optional field both set and unset, text a JSON encoder may escape (NUL, non-ASCII, quotes), a time
    # with microseconds, a duration that rounds to 0 ms.
    return [
        TraceEvent(seq=0, kind="run_started", run_id=run_id, step=0, time=1_700_000_000.123456, scope_id="root"),
        TraceEvent(seq=1, kind="node_completed", run_id=run_id, step=3, time=1_700_000_001.5, scope_id="root",
                   frame_id="f_1", lineage_id="l_1", node_id="body", activation_id="act_1", index=7, label="ok",
                   attempt=2, duration=0.0004, summary={"text": 'é "q" \x00 ✓', "list": [1, 2.5, None, True]}),
        TraceEvent(seq=2, kind="item_completed", run_id=run_id, step=3, time=1_700_000_002.0, node_id="each",
                   activation_id="act_1", index=0, duration=12.3456),
    ]


def _stored(run: Run) -> list[dict[str, Any]]:
    return list(RunEvent.objects.filter(run=run).order_by("seq").values(*COLUMNS))


@pytest.mark.parametrize("copies", [1, COPY_ABOVE])  # one INSERT; COPY on PostgreSQL
def test_appended_rows_are_the_rows_the_orm_stores(copies: int) -> None:
    raw, orm = _run("Raw"), _run("Orm")
    count = 3 * copies
    with transaction.atomic():
        assert append_events(raw.pk, _events(raw.runtime_id) * copies, first=5) == 5 + count
    RunEvent.objects.bulk_create([event_row(orm.pk, event, 5 + n)
                                  for n, event in enumerate(_events(orm.runtime_id) * copies)])
    assert _stored(raw) == _stored(orm)
    assert [row["seq"] for row in _stored(raw)] == list(range(5, 5 + count))
    back = [trace_event(raw.runtime_id, row) for row in RunEvent.objects.filter(run=raw).order_by("seq")]
    assert [event.to_dict() | {"seq": 0} for event in back] == [
        event.to_dict() | {"seq": 0} for event in _events(raw.runtime_id) * copies]


def test_events_are_numbered_on_from_the_stored_trace() -> None:
    run = _run("Numbered")
    with transaction.atomic():
        append_events(run.pk, _events(run.runtime_id)[:2])
        # Another writer's events that reuse numbers already stored go after them.
        assert append_events(run.pk, _events(run.runtime_id)) == 5
    assert [row["seq"] for row in _stored(run)] == [0, 1, 2, 3, 4]


def test_more_events_than_one_insert_takes_are_all_stored_in_order() -> None:
    run = _run("Many")
    events = [TraceEvent(seq=n, kind="node_completed", run_id=run.runtime_id, step=n, time=1_700_000_000.0 + n,
                         index=n) for n in range(1_201)]
    with transaction.atomic():
        assert append_events(run.pk, events) == 1_201
    assert list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", "index")) == [
        (n, n) for n in range(1_201)]


def test_a_kept_checkpoint_is_the_text_the_orm_writes_and_a_redone_superstep_replaces_it() -> None:
    raw, orm = _run("KeptRaw"), _run("KeptOrm")
    state = {"text": 'é "q" \x00 ✓', "nested": {"b": 1, "a": [1.5, None]}}
    first = sample_run_state(step=4)
    with transaction.atomic():
        _keep_checkpoint(raw.pk, first, {"old": True})
        _keep_checkpoint(raw.pk, first, state)
    RunCheckpoint.objects.create(run=orm, step=4, status=first.status, attempt=first.attempt,
                                 engine_trace_seq=first.trace_seq, state=state)
    fields = ("step", "status", "attempt", "engine_trace_seq", "state")
    assert list(RunCheckpoint.objects.filter(run=raw).values(*fields)) == list(
        RunCheckpoint.objects.filter(run=orm).values(*fields))
    assert list(RunCheckpoint.objects.filter(run=raw).values_list("state", flat=True)) == [state]
