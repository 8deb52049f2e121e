"""Tables of the runs domain that stand apart from ``Run`` itself (which is still in ``designer/models.py``).

They name ``Run`` by its label, so this module imports nothing of ``designer.models`` and adds no import cycle.
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models


class RunValue(models.Model):
    """One scalar of a run's input or output at a path (``customers[*].id``), so runs are found by a value.

    The values live in text columns that SQL cannot look into (``ExactJSONField``), and a run's input can hold
    100,000 items: so at most ``designer.runs.values.MAX_VALUES`` scalars of each side are copied here, each
    cut to ``MAX_TEXT`` characters, when the input is stored and when the output is. Lookups are by
    (side, path, text) through one B-tree index, on SQLite and PostgreSQL alike.
    """

    team_lookup: ClassVar[str] = "run__team"

    class Side(models.TextChoices):
        INPUT = "input"
        OUTPUT = "output"

    run = models.ForeignKey("designer.Run", on_delete=models.CASCADE, related_name="+")
    side = models.CharField(max_length=6, choices=Side.choices)
    path = models.CharField(max_length=200)
    text = models.CharField(max_length=200)

    class Meta:
        indexes = [models.Index(fields=("side", "path", "text", "run"), name="runvalue_lookup")]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.side}.{self.path} = {self.text}"
