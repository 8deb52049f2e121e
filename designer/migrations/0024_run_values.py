"""RunValue: runs found by a value of their input or output; existing runs' values are copied in."""

import django.db.models.deletion
from django.db import migrations, models

from designer.runs.values import pairs_of


def copy_values(apps, schema_editor):
    Run = apps.get_model("designer", "Run")
    RunInput = apps.get_model("designer", "RunInput")
    RunValue = apps.get_model("designer", "RunValue")
    inputs = dict(RunInput.objects.values_list("run_id", "value").iterator(chunk_size=500))
    rows = []
    for run_id, output in Run.objects.values_list("pk", "output").iterator(chunk_size=500):
        for side, value in (("input", inputs.get(run_id)), ("output", output)):
            rows.extend(RunValue(run_id=run_id, side=side, path=path, text=text) for path, text in pairs_of(value))
        if len(rows) >= 5000:
            RunValue.objects.bulk_create(rows)
            rows = []
    RunValue.objects.bulk_create(rows)


class Migration(migrations.Migration):

    dependencies = [
        ('designer', '0023_team_retention'),
    ]

    operations = [
        migrations.CreateModel(
            name='RunValue',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('side', models.CharField(choices=[('input', 'Input'), ('output', 'Output')], max_length=6)),
                ('path', models.CharField(max_length=200)),
                ('text', models.CharField(max_length=200)),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='designer.run')),
            ],
            options={
                'indexes': [models.Index(fields=['side', 'path', 'text', 'run'], name='runvalue_lookup')],
            },
        ),
        migrations.RunPython(copy_values, migrations.RunPython.noop),
    ]
