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


class QueuedTask(models.Model):
    """Whose work a queued task is: the team and workflow of the run (or batch) it executes.

    The queue's own rows (django-tasks-db's ``DBTaskResult``) carry only the task's arguments, so ``run_worker``
    could not pick fairly among teams without reading every queued task's run. Written in the transaction that
    enqueues the task (``designer.runs.queue``), deleted with the task's row when retention prunes it.
    Tasks without one (recovery sweeps, schedule ticks) belong to nobody and go first: they are short.
    """

    task = models.OneToOneField("django_tasks_database.DBTaskResult", on_delete=models.CASCADE, primary_key=True,
                                related_name="fair_key")
    team = models.ForeignKey("designer.Team", on_delete=models.CASCADE, related_name="+")
    workflow = models.ForeignKey("designer.Workflow", on_delete=models.CASCADE, related_name="+")

    class Meta:
        indexes = [models.Index(fields=("team", "workflow"), name="queuedtask_owner")]

    def __str__(self) -> str:
        return f"task {self.task_id} of team {self.team_id}, workflow {self.workflow_id}"


class FairShare(models.Model):
    """How much of the workers a team (``workflow_id`` 0) or one of its workflows has had, for the fair pick.

    ``served`` is a team's pass in stride scheduling: each task picked adds ``1 / queue_weight``, and the team
    with the smallest pass among those with queued work goes next; ``last_picked`` orders a team's workflows
    round robin. Plain ids, not keys: a row of a deleted team or workflow is never read again and costs a row.
    """

    team_id = models.IntegerField()
    workflow_id = models.IntegerField(default=0)
    served = models.FloatField(default=0.0)
    last_picked = models.DateTimeField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=("team_id", "workflow_id"), name="fairshare_unique")]

    def __str__(self) -> str:
        return f"team {self.team_id} workflow {self.workflow_id or '-'}: {self.served:.2f}"
