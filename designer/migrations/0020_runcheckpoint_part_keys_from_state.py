"""Kept checkpoints no longer store their part keys: they are read from the state (designer/runs/checkpointer.py)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("designer", "0019_webhook_signature_use")]
    operations = [migrations.RemoveField(model_name="runcheckpoint", name="part_keys")]
