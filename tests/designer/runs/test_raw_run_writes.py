"""The statements that write ``Run`` rows as SQL, not through the ORM, store what the ORM would (issue 33 made them
SQL: compiling the ORM's statements cost more than running them). They are built from the model's fields, so a
column added to ``Run`` is written by them; but not every field is written the same way, and these tests fail
when ``Run`` gains one that the SQL does not handle:

* ``queue.enqueue_new_run``'s INSERT writes every column with the value ``pre_save`` gives (as ``Run.objects
  .create`` does), so a database default (``db_default``), which the ORM leaves to the database, or a generated
  column would be written wrong or refused;
* the UPDATEs of ``OrmCheckpointer`` (a save and its hook's fields) and ``lease.release`` (a run's end) write the
  values they are given, as ``QuerySet.update`` does: neither calls ``pre_save``, so a field that sets itself on
  every save (``auto_now``) is not touched by them, and one that changes the value it is given would differ
  from ``Model.save``.

Each runs on SQLite and on PostgreSQL (``.ci/postgres.sh``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from django.db import connection, models
from django.db.models import NOT_PROVIDED

from designer.models import Run, Team, Workflow
from designer.runs import lease, queue
from designer.runs import services as run_services
from designer.runs.checkpointer import OrmCheckpointer
from runtime import RunState
from runtime.testing.checkpointer_conformance import sample_events, sample_run_state

pytestmark = pytest.mark.django_db(transaction=True)  # the services' own transactions, as in production

#: Fields whose ``pre_save`` gives something other than the value set on the instance. The INSERT calls
#: ``pre_save`` (so these are right there); the UPDATEs do not, as ``QuerySet.update`` does not.
SETS_ITSELF = {"created_at"}
#: ``pre_save`` of Django's own fields that, without ``auto_now``/``auto_now_add``, give the value set.
PLAIN_PRE_SAVE = {models.Field.pre_save, models.DateField.pre_save, models.DateTimeField.pre_save,
                  models.TimeField.pre_save}


def _stored(pk: int) -> dict[str, Any]:
    """The run's row as the database holds it, column by column (read as SQL: no field's conversion between)."""
    quote = connection.ops.quote_name
    columns = [field.column for field in Run._meta.concrete_fields]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(quote(column) for column in columns)} FROM "
                       f"{quote(Run._meta.db_table)} WHERE id = %s", [pk])
        return dict(zip(columns, cursor.fetchone(), strict=True))


def _differences(raw: dict[str, Any], orm: dict[str, Any], *, moments: bool = True,
                 skip: frozenset[str] = frozenset()) -> dict[str, tuple[Any, Any]]:
    """The columns whose values differ. ``moments``: a date and time is taken at the moment of writing, so two
    rows written one after the other agree when both hold one (or both hold none)."""
    differ = {}
    for column, value in raw.items():
        other = orm[column]
        if column in skip or (moments and isinstance(value, datetime) and isinstance(other, datetime)):
            continue
        if value != other:
            differ[column] = (value, other)
    return differ


def _sets_itself(field: models.Field[Any, Any]) -> bool:
    """Whether ``pre_save`` may give another value than the one set on the instance."""
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        return True
    return type(field).pre_save not in PLAIN_PRE_SAVE


def test_run_has_no_field_the_raw_statements_would_write_wrong() -> None:
    """Say what needs a look, naming the field, before a test of the values even runs."""
    defaults = [field.name for field in Run._meta.concrete_fields if field.db_default is not NOT_PROVIDED]
    assert defaults == [], ("queue.enqueue_new_run writes every column of Run: give these fields a Python default "
                            "or make the INSERT leave them to the database")
    generated = [field.name for field in Run._meta.concrete_fields if getattr(field, "generated", False)]
    assert generated == [], "queue.enqueue_new_run and the claim's RETURNING list every concrete column"
    setting = {field.name for field in Run._meta.concrete_fields if _sets_itself(field)}
    assert setting == SETS_ITSELF, ("these Run fields set their own value at a save; the UPDATEs of "
                                    "OrmCheckpointer._run_assignments and lease.release do not call pre_save "
                                    "(QuerySet.update does not either): decide whether they must")


def test_a_new_runs_insert_stores_what_the_orms_create_and_enqueue_store(cast: Any, workflow: Any) -> None:
    """``enqueue_new_run`` is ``Run.objects.create`` then ``queue.enqueue_run`` in fewer statements: the two rows
    agree column for column (ids, and the task each got, aside)."""
    started = run_services.start_run(actor=cast.editor, workflow=workflow, input={"amount": 3})
    made = Run.objects.create(team_id=started.team_id, workflow=workflow, workflow_version=started.workflow_version,
                              document=started.document, subgraph_versions=started.subgraph_versions,
                              created_by=cast.editor, traceparent=started.traceparent, input={"amount": 3})
    Run.objects.filter(pk=made.pk).update(runtime_id=Run.runtime_id_for(made.pk))
    queue.enqueue_run(made.pk)
    raw, orm = _stored(started.pk), _stored(made.pk)
    assert _differences(raw, orm, skip=frozenset({"id", "runtime_id", "task_result_id"})) == {}
    for row in (raw, orm):
        assert row["runtime_id"] == Run.runtime_id_for(row["id"]) and row["task_result_id"]
        assert isinstance(row["created_at"], datetime) and isinstance(row["lease_expires_at"], datetime)


def _claimed_pair(team: Team, workflow: Workflow, **fields: Any) -> tuple[Run, Run]:
    """Two runs alike, each claimed by its own worker: the first for the raw statement, the second for the ORM."""
    runs = tuple(Run.objects.create(team=team, workflow=workflow, document={}, runtime_id=f"run_{n:013d}",
                                    **fields) for n in (1, 2))
    for run, owner in zip(runs, ("raw", "orm"), strict=True):
        assert lease.claim(run.pk, owner)
    return runs  # type: ignore[return-value]


#: What ``Execution._extra_fields`` gives a save: a fork's, a redrive's and a resume's first save.
HOOKS = {
    "fork": {"fork_request": None},
    "redrive": {"redrive_requested": False, "status": Run.Status.RUNNING, "error": None, "finished_at": None},
    "resume": {"resume_request": None, "status": Run.Status.RUNNING, "error": None,
               "interrupts": [{"id": "int_6", "prompt": 'é "q" \x00 ✓', "labels": ["ok"]}]},
}
#: What a save writes besides its hook's fields.
SAVED = frozenset({"run_state", "progress", "items_done", "failures", "lease_expires_at"})
#: What tells two runs created and claimed one after the other apart before any statement under test.
CLAIMED = frozenset({"id", "runtime_id", "created_at", "started_at", "budget_started_at"})


@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_a_saves_hook_fields_are_stored_as_the_orms_update_stores_them(hook: str) -> None:
    """Both kinds of save (several statements while it stores parts; then, on PostgreSQL, one) write the hook's
    fields as ``QuerySet.update`` writes them, and no other column but the save's own."""
    team = Team.objects.create(name="Raw", slug="raw")
    workflow = Workflow.objects.create(team=team, slug="raw", name="Raw")
    raw, orm = _claimed_pair(team, workflow, resume_request={"interrupt_id": "int_6", "value": 1},
                             fork_request={"step": 2}, redrive_requested=True, error={"code": "x"},
                             finished_at=datetime(2026, 1, 2, 3, 4, 5, 678901).astimezone())
    fields = HOOKS[hook]

    def extra_fields(run_state: RunState) -> dict[str, Any]:
        return dict(fields)

    checkpointer = OrmCheckpointer(team, owner="raw", extra_fields=extra_fields)
    checkpointer.remember(raw.runtime_id, raw.pk, trace_next=0, unsaved=True)
    Run.objects.filter(pk=orm.pk).update(**fields)
    for step in (3, 4):
        checkpointer.save(sample_run_state(raw.runtime_id, step=step), sample_events(raw.runtime_id, 2 * step, 2))
        assert _differences(_stored(raw.pk), _stored(orm.pk), moments=False,
                            skip=SAVED | CLAIMED | {"lease_owner"}) == {}


def test_a_runs_release_stores_its_outcome_as_the_orms_update_stores_it() -> None:
    team = Team.objects.create(name="Raw", slug="raw")
    workflow = Workflow.objects.create(team=team, slug="raw", name="Raw")
    raw, orm = _claimed_pair(team, workflow)
    outcome = {"status": "completed", "output": {"total": 42, "note": "\x00 ✓"}, "error": None,
               "interrupts": [], "finished_at": datetime(2026, 1, 2, 3, 4, 5, 678901).astimezone(), "attempts": 0}
    assert lease.release(raw.pk, "raw", **outcome)
    Run.objects.filter(pk=orm.pk).update(lease_owner="", lease_expires_at=None, **outcome)
    assert _differences(_stored(raw.pk), _stored(orm.pk), moments=False,
                        skip=CLAIMED) == {}
