"""A run's input moves from its row to ``RunInput`` (designer/runs/models.py, ``Run.input``): every checkpoint updates the
run's row, and SQLite rewrites the whole row, a 100,000-item input included, at each update."""

from typing import Any

import django.db.models.deletion
from django.db import migrations, models

import designer.core.fields

BATCH = 500


def to_rows(apps: Any, schema_editor: Any) -> None:
    Run = apps.get_model("designer", "Run")
    RunInput = apps.get_model("designer", "RunInput")
    db = schema_editor.connection.alias
    rows = []
    for pk, value in Run.objects.using(db).order_by("pk").values_list("pk", "input").iterator(chunk_size=BATCH):
        rows.append(RunInput(run_id=pk, value=value if value is not None else {}))
        if len(rows) == BATCH:
            RunInput.objects.using(db).bulk_create(rows)
            rows = []
    RunInput.objects.using(db).bulk_create(rows)


def to_column(apps: Any, schema_editor: Any) -> None:
    Run = apps.get_model("designer", "Run")
    RunInput = apps.get_model("designer", "RunInput")
    db = schema_editor.connection.alias
    for pk, value in RunInput.objects.using(db).values_list("run_id", "value").iterator(chunk_size=BATCH):
        Run.objects.using(db).filter(pk=pk).update(input=value)


class Migration(migrations.Migration):
    dependencies = [("designer", "0020_runcheckpoint_part_keys_from_state")]
    operations = [
        migrations.CreateModel(
            name="RunInput",
            fields=[
                ("run", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True,
                                             related_name="+", serialize=False, to="designer.run")),
                ("value", designer.core.fields.ExactJSONField(blank=True, default=dict)),
            ],
        ),
        migrations.RunPython(to_rows, to_column),
        migrations.RemoveField(model_name="run", name="input"),
    ]
