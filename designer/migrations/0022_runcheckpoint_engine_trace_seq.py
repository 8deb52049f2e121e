"""``RunCheckpoint.trace_seq`` is the engine's own event counter, which a distributed foreach's stored event numbers
run ahead of; the name read as a stored ``RunEvent.seq``. Renamed (the API keeps its ``trace_seq`` key, described)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("designer", "0021_run_input_row")]
    operations = [migrations.RenameField(model_name="runcheckpoint", old_name="trace_seq", new_name="engine_trace_seq")]
