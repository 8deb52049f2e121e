"""``append_events`` writes trace events with one COPY (PostgreSQL) or ``executemany`` (SQLite) instead of
``bulk_create``, and a save on PostgreSQL writes them inside its one statement: the rows stored are the ones the ORM
stores for ``event_row``, column for column, and read back as the same events."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from designer.models import Run, RunCheckpoint, RunEvent, RunStatePart, Team, Workflow
from designer.runs.checkpointer import OrmCheckpointer, _keep_checkpoint, append_events, event_row, trace_event
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
        # What COPY's text format escapes (backslash, tab, line breaks), in a column of its own and in JSON; a time
        # on a whole second.
        TraceEvent(seq=3, kind="node_failed", run_id=run_id, step=4, time=1_700_000_003.0, scope_id="root",
                   node_id="odd\\id\twith\nbreaks\r", frame_id="\\N", label="a\\b",
                   summary={"path": "C:\\dir\\\\x", "lines": "one\ntwo\tthree\r"}),
    ]


def _stored(run: Run) -> list[dict[str, Any]]:
    return list(RunEvent.objects.filter(run=run).order_by("seq").values(*COLUMNS))


def test_appended_rows_are_the_rows_the_orm_stores() -> None:
    raw, orm = _run("Raw"), _run("Orm")
    with transaction.atomic():
        assert append_events(raw.pk, _events(raw.runtime_id), first=5) == 9
    RunEvent.objects.bulk_create([event_row(orm.pk, event, 5 + n) for n, event in enumerate(_events(orm.runtime_id))])
    assert _stored(raw) == _stored(orm)
    assert [row["seq"] for row in _stored(raw)] == [5, 6, 7, 8]
    back = [trace_event(raw.runtime_id, row) for row in RunEvent.objects.filter(run=raw).order_by("seq")]
    assert [event.to_dict() | {"seq": 0} for event in back] == [
        event.to_dict() | {"seq": 0} for event in _events(raw.runtime_id)]


def test_events_are_numbered_on_from_the_stored_trace() -> None:
    run = _run("Numbered")
    with transaction.atomic():
        append_events(run.pk, _events(run.runtime_id)[:2])
        # Another writer's events that reuse numbers already stored go after them.
        assert append_events(run.pk, _events(run.runtime_id)) == 6
    assert [row["seq"] for row in _stored(run)] == [0, 1, 2, 3, 4, 5]


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


def test_a_save_in_one_statement_stores_the_rows_the_orm_stores() -> None:
    """On PostgreSQL a save whose trace numbers are known writes its events inside its one statement (a JSON array
    spread by ``json_to_recordset``), not with ``append_events``: the same rows, column for column."""
    raw, orm = _run("Saved"), _run("SavedOrm")
    events = _events(raw.runtime_id)
    checkpointer = OrmCheckpointer(raw.team_id)
    checkpointer.save(sample_run_state(raw.runtime_id, step=1), events[:1])  # stores the parts: statements
    with CaptureQueriesContext(connection) as saving:
        checkpointer.save(sample_run_state(raw.runtime_id, step=2), events[1:])
    if connection.vendor == "postgresql":
        statements = [q["sql"] for q in saving.captured_queries if "SAVEPOINT" not in q["sql"]]  # the test's
        assert [sql[:4] for sql in statements] == ["WITH"], statements
    RunEvent.objects.bulk_create([event_row(orm.pk, event) for event in _events(orm.runtime_id)])
    assert _stored(raw) == _stored(orm)
    assert [event.to_dict() for event in OrmCheckpointer(raw.team_id).load_events(raw.runtime_id)] == [
        event.to_dict() for event in events]


def test_a_runs_first_save_stores_its_parts_in_its_one_statement_as_the_orm_stores_them() -> None:
    """A run's first save (the worker knows the row has no checkpoint yet) stores its new parts, the input and a
    foreach's items here, inside the save's one statement on PostgreSQL: the same rows ``bulk_create`` stores
    for a save that cannot be one statement (issue 33)."""
    raw, orm = _run("First"), _run("FirstOrm")
    known = OrmCheckpointer(raw.team_id, owner=None)
    known.remember(raw.runtime_id, raw.pk, trace_next=0, unsaved=True)
    with CaptureQueriesContext(connection) as saving:
        known.save(sample_run_state(raw.runtime_id, step=1), _events(raw.runtime_id)[:1])
    OrmCheckpointer(orm.team_id).save(sample_run_state(orm.runtime_id, step=1), _events(orm.runtime_id)[:1])
    if connection.vendor == "postgresql":
        sent = [query["sql"] for query in saving.captured_queries if "SAVEPOINT" not in query["sql"]]  # the test's
        assert len(sent) == 1 and sent[0].startswith("WITH run AS (UPDATE") and "parts AS (INSERT" in sent[0]
    parts = list(RunStatePart.objects.filter(run=raw).order_by("key").values_list("key", "value"))
    assert len(parts) == 2 and parts == list(
        RunStatePart.objects.filter(run=orm).order_by("key").values_list("key", "value"))
    assert known.load(raw.runtime_id).to_json() == sample_run_state(raw.runtime_id, step=1).to_json()
