"""``designer.core.rows`` builds model instances from rows hand-written SQL returned (a run's claim, a task's, a run's
notification rule) without ``Model.objects.raw``: every field as the ORM loads it, on either database."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.models import Model
from django_tasks_db.models import DBTaskResult

from bench._workloads import one_math_step_document
from designer.core import rows
from designer.models import Run
from designer.notifications.models import NotificationRule
from designer.runs import services as run_services

pytestmark = pytest.mark.django_db


def _read(model: type[Model], pk: Any) -> Model:
    reader = rows.reader(model, connection.alias)
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {reader.columns}, 42 FROM {table} WHERE {model._meta.pk.column} = %s",
                       [model._meta.pk.get_db_prep_value(pk, connection)])
        row = cursor.fetchone()
    assert row[-1] == 42  # the caller's values after the model's columns are left alone
    return reader.instance(row)


def _fields(instance: Model) -> dict[str, Any]:
    return {field.attname: getattr(instance, field.attname) for field in type(instance)._meta.concrete_fields}


def test_an_instance_read_from_a_row_is_the_one_the_orm_loads(cast: Any) -> None:
    workflow = cast.workflow("One", one_math_step_document())
    run = run_services.start_run(actor=cast.editor, workflow=workflow)
    Run.objects.filter(pk=run.pk).update(output={"sum": 3, "é": [1.5, None]}, error={"code": "x"})
    rule = NotificationRule.objects.create(team=cast.team, workflow=workflow, on_failure=True)
    for model, pk in ((Run, run.pk), (DBTaskResult, run.task_result_id), (NotificationRule, rule.pk)):
        read = _read(model, pk)
        stored = model.objects.get(pk=pk)
        assert type(read) is model and not read._state.adding and read._state.db == connection.alias
        assert _fields(read) == _fields(stored), model
    assert isinstance(_read(Run, run.pk).created_at.tzinfo, type(run.created_at.tzinfo))
    assert rows.reader(Run, connection.alias) is rows.reader(Run, connection.alias)  # worked out once
