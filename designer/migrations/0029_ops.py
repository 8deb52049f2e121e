from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("designer", "0028_notifications"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="traceparent",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.CreateModel(
            name="WorkerHeartbeat",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("worker_id", models.CharField(max_length=200, unique=True)),
                ("host", models.CharField(max_length=255)),
                ("pid", models.PositiveIntegerField()),
                ("started_at", models.DateTimeField()),
                ("last_seen", models.DateTimeField(db_index=True)),
            ],
        ),
    ]
