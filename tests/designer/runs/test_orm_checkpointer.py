"""The ORM checkpointer passes the runtime's shared Checkpointer conformance tests, plus the designer's own
guarantees: state and events in one transaction, and no writes from a worker that lost its lease."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from designer.models import Run, RunCheckpoint, RunEvent, RunStatePart, Team, Workflow
from designer.runs import lease
from designer.runs.checkpointer import (
    HookWroteElsewhereError,
    OrmCheckpointer,
    UnknownRunError,
    append_events,
    run_state_of,
)
from runtime import RunState, WorkflowBuilder
from runtime.checkpoint import HistoryPolicy
from runtime.errors import CorruptRunStateError
from runtime.paths import input_path
from runtime.testing.checkpointer_conformance import CheckpointerConformance, sample_events, sample_run_state
from tests.runtime.engine_helpers import asking, engine

pytestmark = pytest.mark.django_db

_teams = count(1)


def fresh_team() -> tuple[Team, Workflow]:
    n = next(_teams)
    team = Team.objects.create(name=f"Checkpoints {n}", slug=f"checkpoints-{n}")
    return team, Workflow.objects.create(team=team, slug="conformance", name="Conformance")


def checkpointer_for(team: Team, workflow: Workflow, **options: Any) -> OrmCheckpointer:
    def create_run(run_state: RunState) -> Run:
        return Run.objects.create(team=team, workflow=workflow, document={}, runtime_id=run_state.run_id)

    return OrmCheckpointer(team, create_run=create_run, **options)


class TestOrmCheckpointer(CheckpointerConformance):
    # Each checkpointer gets its own team: "a fresh, empty checkpointer" whose run ids cannot meet another's.
    def make_checkpointer(self) -> OrmCheckpointer:
        return checkpointer_for(*fresh_team())

    def make_history_checkpointer(self, policy: HistoryPolicy) -> OrmCheckpointer:
        return checkpointer_for(*fresh_team(), history=policy)

    def reopen(self, checkpointer: Any) -> OrmCheckpointer:
        return OrmCheckpointer(checkpointer.team_id, history=checkpointer.history_policy)


def test_state_and_events_commit_together_or_not_at_all() -> None:
    team, workflow = fresh_team()
    cp = checkpointer_for(team, workflow)
    rs = sample_run_state()
    cp.save(rs, sample_events(rs.run_id, 0, 2))

    later = sample_run_state(step=9)
    # An item index no database integer holds fails the event insert inside the transaction ...
    unstorable = [replace(event, index=2**64) for event in sample_events(rs.run_id, 2, 2)]
    with pytest.raises(Exception, match="(?i)int|range"):
        cp.save(later, unstorable)
    # ... and the state update of that same save is rolled back with it.
    assert cp.load(rs.run_id).step == 3
    assert [e.seq for e in cp.load_events(rs.run_id)] == [0, 1]
    # Events are numbered on from the stored trace, never over it: a save whose events repeat numbers already
    # stored (another writer, a distributed foreach's batch, appended meanwhile) stores them after.
    cp.save(later, sample_events(rs.run_id, 1, 2))
    assert [e.seq for e in cp.load_events(rs.run_id)] == [0, 1, 2, 3]


def test_a_worker_that_lost_its_lease_writes_nothing() -> None:
    team, workflow = fresh_team()
    run = Run.objects.create(team=team, workflow=workflow, document={}, runtime_id="run_0000000000001")
    assert lease.claim(run.pk, "worker-a")
    Run.objects.filter(pk=run.pk).update(lease_owner="worker-b")  # as if b took over an expired lease

    stale = OrmCheckpointer(team, owner="worker-a")
    with pytest.raises(lease.LeaseLost):
        stale.save(sample_run_state(), sample_events("run_0000000000001", 0, 1))
    assert Run.objects.get(pk=run.pk).run_state is None
    assert not RunEvent.objects.filter(run=run).exists()

    OrmCheckpointer(team, owner="worker-b").save(sample_run_state())
    assert Run.objects.get(pk=run.pk).run_state["step"] == 3


def test_saving_renews_the_lease_and_reports_a_cancel_request() -> None:
    team, workflow = fresh_team()
    run = Run.objects.create(team=team, workflow=workflow, document={}, runtime_id="run_0000000000001")
    claimed = lease.claim(run.pk, "worker-a")
    assert claimed is not None
    Run.objects.filter(pk=run.pk).update(cancel_requested=True)

    cp = OrmCheckpointer(team, owner="worker-a")
    cp.save(sample_run_state())
    assert cp.cancel_requested
    assert Run.objects.get(pk=run.pk).lease_expires_at > claimed.lease_expires_at


def test_keeping_every_checkpoint_reads_none_of_them_back_at_a_save() -> None:
    """With history ``all`` a save only inserts its checkpoint: reading the kept ones back at each save made a
    long run's saves O(supersteps) each. A bounded policy still prunes (the conformance tests)."""
    team, workflow = fresh_team()
    cp = checkpointer_for(team, workflow, history=HistoryPolicy())
    for step in range(1, 6):
        cp.save(sample_run_state(step=step))
    with CaptureQueriesContext(connection) as queries:
        cp.save(sample_run_state(step=6))
        cp.save(sample_run_state(step=6))  # a superstep redone after a crash replaces its checkpoint
    touching = [q["sql"] for q in queries.captured_queries if "designer_runcheckpoint" in q["sql"]]
    # An INSERT of its own (SQLite), or a clause of the save's one statement (PostgreSQL): never a read.
    assert len(touching) == 2 and all('INSERT INTO "designer_runcheckpoint"' in sql and not sql.startswith("SELECT")
                                      for sql in touching), touching
    assert [info.step for info in cp.history("run_0000000000001")] == [1, 2, 3, 4, 5, 6]


def test_keeping_the_last_n_reads_no_kept_state_while_the_dropped_parts_are_live() -> None:
    """A bounded policy drops a checkpoint at each save; its parts are still the live state's, so the save
    reads the dropped checkpoint's state but none of the kept ones. Parts that do go are the conformance tests'."""
    team, workflow = fresh_team()
    cp = checkpointer_for(team, workflow, history=HistoryPolicy(2))
    for step in range(1, 6):
        cp.save(sample_run_state(step=step))
    with CaptureQueriesContext(connection) as queries:
        cp.save(sample_run_state(step=6))
    reads = [q["sql"] for q in queries.captured_queries
             if q["sql"].startswith("SELECT") and "designer_runcheckpoint" in q["sql"]]
    states = [sql for sql in reads if '"designer_runcheckpoint"."state"' in sql]
    assert len(states) == 1 and '"step" IN (4)' in states[0], reads  # the dropped one's, to learn its parts
    assert [info.step for info in cp.history("run_0000000000001")] == [5, 6]
    assert RunStatePart.objects.filter(run__team=team).exists()


def test_runs_of_another_team_are_invisible() -> None:
    team, workflow = fresh_team()
    other, _ = fresh_team()
    checkpointer_for(team, workflow).save(sample_run_state())

    with pytest.raises(UnknownRunError):
        OrmCheckpointer(other).save(sample_run_state())
    assert OrmCheckpointer(other).load_events("run_0000000000001") == []


def test_write_once_parts_are_stored_once_not_in_every_checkpoint() -> None:
    team, workflow = fresh_team()
    cp = checkpointer_for(team, workflow, history=None)  # the live parts alone
    rs = sample_run_state(item={"big": "x" * 1000})
    cp.save(rs)
    run = Run.objects.get(runtime_id=rs.run_id)
    parts = {part.key: part for part in RunStatePart.objects.filter(run=run)}
    assert set(parts) == {"items:act_3", "input:root"}
    assert parts["items:act_3"].value == [{"big": "x" * 1000}]
    assert parts["input:root"].value == {"people": [{"big": "x" * 1000}]}
    # The column holds the live structure only.
    assert "items" not in run.run_state["activations"]["act_3"] and "input" not in run.run_state["scopes"]["root"]

    rs.step = 4
    cp.save(rs)  # same activation and scope: nothing written again
    assert {part.key: part.pk for part in RunStatePart.objects.filter(run=run)} == {k: p.pk for k, p in parts.items()}
    loaded = OrmCheckpointer(team).load(rs.run_id)
    assert loaded.activations["act_3"].items == [{"big": "x" * 1000}]
    assert loaded.scopes["root"].input == {"people": [{"big": "x" * 1000}]}
    complete = run_state_of(Run.objects.get(pk=run.pk))
    assert complete is not None and complete["activations"]["act_3"]["items"] == [{"big": "x" * 1000}]

    rs.activations.clear()  # the foreach finished: its snapshot goes, the scope's input stays
    rs.barriers.clear()
    rs.frames.pop("frame_4")
    rs.interrupts.clear()
    cp.save(rs)
    assert set(RunStatePart.objects.filter(run=run).values_list("key", flat=True)) == {"input:root"}


def test_a_foreach_over_a_thousand_items_writes_them_once() -> None:
    """Each item list and input is inserted once; every checkpoint column stays the size of the live structure."""
    team, workflow = fresh_team()
    columns: list[int] = []

    class Watching(OrmCheckpointer):
        def save(self, run_state: RunState, events: Any = ()) -> None:
            super().save(run_state, events)
            columns.append(len(json.dumps(Run.objects.get(runtime_id=run_state.run_id).run_state)))

    def create_run(run_state: RunState) -> Run:
        return Run.objects.create(team=team, workflow=workflow, document={}, runtime_id=run_state.run_id)

    g = WorkflowBuilder("thousand", input_schema={"type": "object", "properties": {"orders": {"type": "array"}}})
    orders = g.foreach("orders", input_path("orders"))
    body = g.use("double", id="body", input=[{"target": "x", "path": orders.item}])
    g.chain(orders, "loop", body, "ok", orders)
    items = list(range(1000, 2000))
    items_bytes = len(json.dumps(items))

    with CaptureQueriesContext(connection) as queries:
        result = engine(checkpointer=Watching(team, create_run=create_run, history=None)).run(g.build(),
                                                                                    {"orders": items})
    assert result.status == "completed"
    assert len(columns) > len(items)  # a checkpoint per superstep

    part_inserts = [q["sql"] for q in queries.captured_queries
                    if "INSERT" in q["sql"] and RunStatePart._meta.db_table in q["sql"]]
    assert len([sql for sql in part_inserts if "items:" in sql]) == 1
    assert len([sql for sql in part_inserts if "input:root" in sql]) == 1
    # The list's bytes go to the database in those two inserts (items part, input part) and in no other query.
    listed = json.dumps(items)[1:-1]
    assert sum(q["sql"].count(listed) for q in queries.captured_queries) == 2
    assert max(columns) < items_bytes / 2
    assert sum(columns) < len(columns) * items_bytes / 2
    run = Run.objects.get(runtime_id=result.run_id)
    assert not RunStatePart.objects.filter(run=run, key__startswith="items:").exists()  # dropped when done
    complete = run_state_of(run)
    assert complete is not None and complete["scopes"]["root"]["input"] == {"orders": items}


def _collecting_run(size: int) -> tuple[list[int], list[int], Any]:
    """A foreach collecting results and appending to a state list, through the ORM checkpointer.

    Per save: the size of the ``Run.run_state`` column, and how many parts rows were inserted.
    """
    team, workflow = fresh_team()
    columns: list[int] = []
    inserted: list[int] = []

    class Watching(OrmCheckpointer):
        def save(self, run_state: RunState, events: Any = ()) -> None:
            before = RunStatePart.objects.count()
            super().save(run_state, events)
            inserted.append(RunStatePart.objects.count() - before)
            columns.append(len(json.dumps(Run.objects.get(team=team, runtime_id=run_state.run_id).run_state)))

    def create_run(run_state: RunState) -> Run:
        return Run.objects.create(team=team, workflow=workflow, document={}, runtime_id=run_state.run_id)

    g = WorkflowBuilder("collect", input_schema={"type": "object", "properties": {"orders": {"type": "array"}}},
                        state_schema={"type": "object", "properties": {"log": {"type": "array", "default": []}}})
    orders = g.foreach("orders", input_path("orders"), max_concurrency=3, results="doubled")
    body = g.use("double", id="body", input=[{"target": "x", "path": orders.item}],
                 output=[{"source": ".", "target": "log", "mode": "append"}])
    g.chain(orders, "loop", body, "ok", orders)
    result = engine(checkpointer=Watching(team, create_run=create_run)).run(g.build(), {"orders": list(range(size))})
    assert result.status == "completed"
    assert result.state["doubled"] == [2 * x for x in range(size)]
    return columns, inserted, (result, team)


def test_collected_results_and_appended_lists_are_not_rewritten_at_every_save() -> None:
    """The column stays the size of the live structure and each save inserts at most a chunk per list."""
    small_columns, _, _ = _collecting_run(300)
    columns, inserted, (result, team) = _collecting_run(1200)
    assert max(columns) < 1.3 * max(small_columns)
    assert max(inserted) <= 2
    complete = run_state_of(Run.objects.get(team=team, runtime_id=result.run_id))
    assert complete is not None
    assert complete["scopes"]["root"]["state"]["doubled"] == [2 * x for x in range(1200)]
    assert sorted(complete["scopes"]["root"]["state"]["log"]) == [2 * x for x in range(1200)]
    assert RunState.from_json(complete).model_dump(mode="json") == result.run_state.model_dump(mode="json")


def test_a_kept_checkpoint_row_holds_nothing_that_grows_besides_its_state() -> None:
    """History ``all``: what a kept checkpoint row stores besides its ``state`` (itself the size of the live
    structure, the test above) does not grow with the collected lists' chunks; a list of the part keys stored
    per row did, and made a long run's history quadratic in bytes. Pruning reads the keys from the state."""

    def outside_state(size: int) -> set[int]:
        _, _, (_, team) = _collecting_run(size)
        rows = RunCheckpoint.objects.filter(run__team=team).values()
        assert len(rows) > size // 3  # one per superstep
        return {len(json.dumps(row, default=str)) - len(json.dumps(row["state"])) for row in rows}

    sizes = outside_state(130) | outside_state(1300)  # 2 chunks of 128 per list, then 11
    assert max(sizes) - min(sizes) < 20, sorted(sizes)  # the digits of step and trace_seq


def test_a_lost_part_makes_the_checkpoint_corrupt_not_empty() -> None:
    team, workflow = fresh_team()
    rs = sample_run_state()
    checkpointer_for(team, workflow).save(rs)
    run = Run.objects.get(team=team, runtime_id=rs.run_id)
    RunStatePart.objects.filter(run=run, key="input:root").delete()
    with pytest.raises(CorruptRunStateError) as caught:
        OrmCheckpointer(team).load(rs.run_id)
    assert caught.value.details == {"part": "input:root", "scope_id": "root"}
    with pytest.raises(CorruptRunStateError):
        run_state_of(run)


def _wal_pages_per_save(size: int) -> float:
    """Database pages one save commits to SQLite's write-ahead log, for a run whose input holds ``size`` items."""
    team, workflow = fresh_team()
    run = Run.objects.create(team=team, workflow=workflow, document={}, runtime_id=f"run_{size:013d}",
                             input={"items": list(range(size))})
    cp = OrmCheckpointer(team, owner="worker-a")
    assert lease.claim(run.pk, "worker-a")
    cp.save(sample_run_state(run.runtime_id))  # the first save also stores the parts
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA page_size")
        page = cursor.fetchone()[0]
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # empties the log: what follows is these saves alone
        assert cursor.fetchone()[0] == 0, "the log was not truncated (another connection reading?)"
    saves = 5
    for step in range(4, 4 + saves):
        # A state of another length at each save, as a running foreach's is (a row of the same length SQLite can
        # overwrite in place, leaving unchanged pages alone).
        state = sample_run_state(run.runtime_id, step=step, item={"note": "x" * step})
        cp.save(state, sample_events(run.runtime_id, step * 2, 2))
    wal = Path(connection.settings_dict["NAME"] + "-wal")
    return wal.stat().st_size / (page + 24) / saves  # a log frame: a 24-byte header and one page


@pytest.mark.django_db(transaction=True)
def test_a_save_does_not_rewrite_the_runs_input() -> None:
    # Every save updates the run's row, and SQLite writes a whole row again at an update: a 50,000-item input in
    # the row made each save commit 175 log pages instead of 9 (the worker's CPU per item grew 2.3x from 10k to
    # 100k items).
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL keeps an unchanged large value out of the rewritten row (TOAST)")
    small, large = _wal_pages_per_save(10), _wal_pages_per_save(50_000)
    assert small < 12
    assert large <= small + 1


def _seqs(team: Team) -> list[int]:
    return list(RunEvent.objects.filter(run__team=team).order_by("seq").values_list("seq", flat=True))


def _saved_run(steps: int) -> tuple[Team, str]:
    """A fresh team's run saved ``steps`` times by one checkpointer, two events a save: the team and the run's id."""
    team, workflow = fresh_team()
    first = checkpointer_for(team, workflow)
    run_id = sample_run_state().run_id
    for step in range(1, steps + 1):
        first.save(sample_run_state(step=step), sample_events(run_id, 2 * (step - 1), 2))
    return team, run_id


def test_a_resume_loads_in_two_reads_and_its_first_save_reads_nothing_back() -> None:
    """Resume flat in history (issue 33): ``Run.run_state`` is the snapshot, so ``load`` reads the row (with where
    its trace ends) and the parts the state names, however many supersteps came before; and it tells the
    checkpointer what it found, so the first save after it reads nothing and rewrites no part."""
    team, run_id = _saved_run(40)
    reopened = OrmCheckpointer(team)
    with CaptureQueriesContext(connection) as loading:
        loaded = reopened.load(run_id)
    assert len(loading.captured_queries) == 2, [q["sql"] for q in loading.captured_queries]
    assert loaded.to_json() == sample_run_state(step=40).to_json()
    with CaptureQueriesContext(connection) as saving:
        reopened.save(sample_run_state(step=41), sample_events(run_id, 80, 2))
    statements = [q["sql"] for q in saving.captured_queries]
    assert not [sql for sql in statements if sql.startswith("SELECT")], statements
    assert not [sql for sql in statements if "designer_runstatepart" in sql], statements
    assert _seqs(team) == list(range(82))
    assert OrmCheckpointer(team).load(run_id).to_json() == sample_run_state(step=41).to_json()


def test_a_loaded_run_continues_its_trace_where_the_trace_ends_not_where_its_state_counts() -> None:
    """Another writer (a distributed batch's commit) may have appended to the trace after the run's own last
    save: the load reads the trace's end, so the resumed run's events go after those, never onto their numbers."""
    team, workflow = fresh_team()
    run_id = sample_run_state().run_id
    checkpointer_for(team, workflow).save(sample_run_state(step=1), sample_events(run_id, 0, 2))
    append_events(Run.objects.get(team=team).pk, sample_events(run_id, 0, 3))  # stored as 2, 3, 4
    reopened = OrmCheckpointer(team)
    reopened.load(run_id)
    reopened.save(sample_run_state(step=2), sample_events(run_id, 2, 2))  # the engine numbers them 2 and 3
    assert _seqs(team) == list(range(7))



def test_a_loaded_state_is_the_callers_own_so_its_resume_works_on_it_without_a_copy() -> None:
    """``load`` parses for the engine (``parse_run_state``): nobody else holds the state, so the resume that
    follows works on that object instead of deep-copying it first (a copy cost a tenth of a resume's CPU), and
    what the resume saved is what the next load reads."""
    team, workflow = fresh_team()
    document = asking()
    paused = engine(checkpointer=checkpointer_for(team, workflow)).run(document, {"xs": [5]})
    assert paused.status == "interrupted"
    loaded = OrmCheckpointer(team).load(paused.run_id)
    step_before = loaded.step
    (interrupt_id,) = loaded.interrupts
    done = engine(checkpointer=OrmCheckpointer(team)).resume(loaded, interrupt_id, {"a": 7}, workflow=document)
    assert done.status == "completed" and done.output == {"answers": [{"a": 7}]}
    assert loaded.step > step_before and not loaded.interrupts  # the resume advanced this very object
    assert OrmCheckpointer(team).load(paused.run_id).to_json() == done.run_state.to_json()


@pytest.mark.django_db(transaction=True)
def test_a_save_after_a_load_is_one_statement_and_no_transaction_on_postgresql() -> None:
    """Resume after 10,000 steps within 2 ms on PostgreSQL (issue 33), where each round trip costs the process
    about 50 us and the server a statement: a save that writes only the run's row, its kept checkpoint and its
    events (numbered on from where the load found the trace's end) is one statement, which on its own is a
    transaction, where it was BEGIN, UPDATE, INSERT, COPY (two round trips) and COMMIT."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite runs in the process: its statements cost no round trip")
    team, run_id = _saved_run(3)
    reopened = OrmCheckpointer(team)
    reopened.load(run_id)
    sent: list[tuple[str, bool]] = []

    def watch(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        sent.append((sql, connection.in_atomic_block))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(watch):
        reopened.save(sample_run_state(step=4), sample_events(run_id, 6, 2))
    assert [(sql[:4], in_transaction) for sql, in_transaction in sent] == [("WITH", False)], sent
    assert OrmCheckpointer(team).load(run_id).to_json() == sample_run_state(step=4).to_json()
    assert _seqs(team) == list(range(8))
    assert [info.step for info in reopened.history(run_id)] == [1, 2, 3, 4]


@pytest.mark.django_db(transaction=True)
def test_a_save_reports_a_cancel_and_writes_nothing_once_the_lease_is_lost() -> None:
    """Whatever statements a save takes (a transaction of several while it stores parts, then one), a cancel
    request is read by its write and a worker that lost the lease stores nothing: not the row, not its events,
    not a kept checkpoint."""
    team, workflow = fresh_team()
    run = Run.objects.create(team=team, workflow=workflow, document={}, runtime_id="run_0000000000001")
    assert lease.claim(run.pk, "worker-a")
    cp = OrmCheckpointer(team, owner="worker-a")
    cp.remember(run.runtime_id, run.pk, trace_next=0, unsaved=True)
    cp.save(sample_run_state(step=3), sample_events(run.runtime_id, 0, 2))  # stores the parts too
    assert not cp.cancel_requested
    Run.objects.filter(pk=run.pk).update(cancel_requested=True)
    cp.save(sample_run_state(step=4), sample_events(run.runtime_id, 2, 2))
    assert cp.cancel_requested
    Run.objects.filter(pk=run.pk).update(lease_owner="worker-b")
    with pytest.raises(lease.LeaseLost):
        cp.save(sample_run_state(step=5), sample_events(run.runtime_id, 4, 2))
    assert OrmCheckpointer(team).load(run.runtime_id).step == 4
    assert _seqs(team) == [0, 1, 2, 3]
    assert [info.step for info in cp.history(run.runtime_id)] == [3, 4]


@pytest.mark.django_db(transaction=True)
def test_the_hooks_fields_are_stored_as_the_orm_stores_them_and_its_rows_commit_with_the_save() -> None:
    """``extra_fields`` (the worker's: a resume's first save clears the request and records the interrupts) are
    written by the save's own statement, prepared as the ORM prepares them; rows the hook writes keep the save a
    transaction, so they commit with it or, when the lease is lost, not at all."""
    team, workflow = fresh_team()
    run = Run.objects.create(team=team, workflow=workflow, document={}, runtime_id="run_0000000000001",
                             resume_request={"interrupt_id": "int_6", "value": 1}, error={"code": "x"})
    assert lease.claim(run.pk, "worker-a")
    interrupts = [{"id": "int_6", "prompt": 'é "q" \x00 ✓', "labels": ["ok"]}]
    writes: list[str] = []

    def hook(run_state: RunState) -> dict[str, Any]:
        for slug in writes:
            Team.objects.create(name=slug, slug=slug)
        return {"resume_request": None, "status": Run.Status.RUNNING, "interrupts": interrupts, "error": None}

    cp = OrmCheckpointer(team, owner="worker-a", extra_fields=hook)
    cp.remember(run.runtime_id, run.pk, trace_next=0, unsaved=True)
    cp.save(sample_run_state(step=3), sample_events(run.runtime_id, 0, 2))
    cp.save(sample_run_state(step=4), sample_events(run.runtime_id, 2, 2))  # parts stored: one statement
    stored = Run.objects.get(pk=run.pk)
    assert (stored.status, stored.interrupts, stored.resume_request, stored.error) == (
        "running", interrupts, None, None)
    assert Run.objects.filter(pk=run.pk, resume_request__isnull=True, error__isnull=True).exists()  # SQL NULL
    writes.append("hooked")
    cp.save(sample_run_state(step=5), sample_events(run.runtime_id, 4, 2))
    assert Team.objects.filter(slug="hooked").exists()
    writes[:] = ["lost"]
    Run.objects.filter(pk=run.pk).update(lease_owner="worker-b")
    with pytest.raises(lease.LeaseLost):
        cp.save(sample_run_state(step=6), sample_events(run.runtime_id, 6, 2))
    assert not Team.objects.filter(slug="lost").exists()
    assert _seqs(team) == list(range(6))


@pytest.fixture
def elsewhere(transactional_db: None) -> Iterator[str]:
    """A second database alias, on the test database itself: another connection, as a second database would be.
    Added after the test's database setup and connected at once (``connect``, not ``ensure_connection``): Django's
    test case refuses to open a connection to a database the test did not ask for, and it cannot ask for one that
    is not configured when the suite starts."""
    connections.settings["elsewhere"] = dict(connections["default"].settings_dict)
    try:
        connections["elsewhere"].connect()
        yield "elsewhere"
    finally:
        connections["elsewhere"].close()
        del connections["elsewhere"]
        del connections.settings["elsewhere"]


def test_a_hook_that_writes_through_another_connection_is_refused_and_the_save_writes_nothing(
        elsewhere: str) -> None:
    """What the hook writes commits with the save only through the save's connection, and the save tells from that
    connection alone whether the hook wrote: a write through another one would commit whatever became of the
    save, beside a save that went out as one statement of its own."""
    team, workflow = fresh_team()
    run = Run.objects.create(team=team, workflow=workflow, document={}, runtime_id="run_0000000000001")
    assert lease.claim(run.pk, "worker-a")

    def hook(run_state: RunState) -> dict[str, Any]:
        assert Team.objects.using(elsewhere).filter(pk=team.pk).exists()  # reading is harmless
        Team.objects.using(elsewhere).filter(pk=team.pk).update(name="written elsewhere")
        return {"status": Run.Status.RUNNING}

    cp = OrmCheckpointer(team, owner="worker-a", extra_fields=hook)
    cp.remember(run.runtime_id, run.pk, trace_next=0, unsaved=True)
    with pytest.raises(HookWroteElsewhereError) as refused:
        cp.save(sample_run_state(step=3), sample_events(run.runtime_id, 0, 2))
    assert (refused.value.code, refused.value.details["alias"]) == ("checkpoint.hook_elsewhere", elsewhere)
    assert Team.objects.get(pk=team.pk).name == team.name
    assert Run.objects.get(pk=run.pk).run_state is None and _seqs(team) == []
