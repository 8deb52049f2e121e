"""The runs domain's rows: runs, their events, checkpoints and state parts, distributed foreach batches, the
values runs are found by, whose queued work is whose (fair queues), and the recovery chain."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.db import connections, models, transaction

from designer.access.models import Team, TeamScoped
from designer.core.fields import ExactJSONField
from designer.runs import values as run_values
from designer.workflows.models import Workflow, WorkflowVersion

_INPUT = "_trellis_input"  # Run.input, once read or set
_INPUT_UNSAVED = "_trellis_input_unsaved"


class Run(TeamScoped):
    """One execution. ``document`` is the exact graph that runs (a draft snapshot or a version's)."""

    workflow_lookup: ClassVar[str] = "workflow"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        INTERRUPTED = "interrupted", "Interrupted"
        #: Holds no worker: waits for its distributed foreach batches (``ForeachBatch``) to finish, or until
        #: ``wake_at`` (a retry's backoff, a wait step), when its task is enqueued to run.
        WAITING = "waiting", "Waiting"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    FINISHED: ClassVar[frozenset[str]] = frozenset({"completed", "failed", "cancelled"})
    #: Not a column: the number the run's next trace event gets, as the worker's claim read it with the row
    #: (``lease.claim``); None when not read.
    trace_next: int | None = None

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="runs")
    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="runs")
    workflow_version = models.ForeignKey(
        WorkflowVersion, null=True, blank=True, on_delete=models.RESTRICT, related_name="runs",
        help_text="the published version that ran; empty when the run used the draft captured in its document",
    )
    document = ExactJSONField()
    # The runtime's run id (RunState.run_id, trace events), unique within the team. Set when the run is created;
    # the ORM checkpointer (one per team) finds the row by it. Null only for rows made outside the services.
    runtime_id = models.CharField(max_length=64, null=True, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    # ``input`` is a property over ``RunInput`` (below): kept out of this row, which every checkpoint rewrites.
    output = ExactJSONField(null=True, blank=True)
    error = ExactJSONField(null=True, blank=True)
    run_state = ExactJSONField(
        null=True, blank=True,
        help_text="the latest checkpoint (RunState JSON) without its write-once parts, which are RunStatePart rows",
    )
    interrupts = ExactJSONField(default=list, blank=True)
    cancel_requested = models.BooleanField(default=False)
    # An accepted resume ({interrupt_id, value, label}) that a worker has yet to apply. It lives on the row, not
    # in the task's arguments, so a worker that dies before the next checkpoint leaves it for the one that recovers.
    resume_request = ExactJSONField(null=True, blank=True)
    # Every accepted answer to an interrupt, oldest first: {interrupt_id, node_id, prompt, label, value, by, at}.
    # The trace says that the run resumed; this says who answered, which the run's page shows.
    answers = ExactJSONField(default=list, blank=True)
    # {child workflow slug: version number}: what each unversioned subgraph reference ("latest published")
    # meant when the run started. The run keeps using those versions, however long it is interrupted.
    subgraph_versions = ExactJSONField(default=dict, blank=True)
    # When a waiting run's next attempt (or the end of its wait step) is due: its task is enqueued for then.
    wake_at = models.DateTimeField(null=True, blank=True)
    # Counters the checkpointer writes with every save, so the live run page reads a few small columns per
    # poll whatever the run's size (``designer.runs.checkpointer.progress_of``): {step, next_seq, frames,
    # foreach: [{activation_id, node_id, done, total, running, parent_activation_id, parent_index}]} of the
    # live activations; and, summed over the run's trace, items completed and steps failed.
    progress = ExactJSONField(null=True, blank=True)
    items_done = models.PositiveBigIntegerField(default=0)
    failures = models.PositiveIntegerField(default=0)
    # A redrive a worker has yet to start: set with the run queued again, cleared by the redrive's first checkpoint
    # (like resume_request), so a worker that dies before it leaves the request for the one that recovers the run.
    redrive_requested = models.BooleanField(default=False)
    # A run forked from another's checkpoint: which run, and after which of its supersteps.
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks")
    forked_from_step = models.PositiveIntegerField(null=True, blank=True)
    # A fork a worker has yet to start ({step, state, answer}, checked by the service); its first checkpoint
    # clears it. The parent's kept checkpoint after ``step`` is where the new run goes on from.
    fork_request = ExactJSONField(null=True, blank=True)
    lease_owner = models.CharField(max_length=200, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # The django.tasks result id of the latest execute_run task enqueued for this run. Recovery asks the task
    # backend about it through the public API (``execute_run.get_result(id).status``): still waiting in the
    # queue, or taken by a worker that has since stopped renewing the lease. Empty before the first enqueue.
    task_result_id = models.CharField(max_length=64, blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The run's budgets (designer/runs/budgets.py): when this attempt first started (a redrive starts a new one)
    # and the step-seconds its drives and batches used so far.
    budget_started_at = models.DateTimeField(null=True, blank=True)
    step_seconds_used = models.FloatField(default=0.0)
    # The W3C traceparent of the span that first enqueued the run (designer/monitoring/tracing.py): the worker's
    # run spans are its children, so the run's trace starts at the web request that started it.
    traceparent = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        ordering = ("-created_at", "-pk")
        indexes = [
            models.Index(fields=("team", "-created_at"), name="run_team_created"),
            models.Index(fields=("workflow", "-created_at"), name="run_workflow_created"),
            # The retention prune reads each team's finished runs by age (designer/runs/retention.py).
            models.Index(fields=("team", "finished_at"), name="run_team_finished"),
            # Runs that want a worker now or at their wake-up time (recovery's scan). Not on lease_expires_at:
            # every checkpoint and heartbeat rewrites it, and an indexed column that changes makes PostgreSQL
            # rewrite every index of the row (no heap-only update): measured on 270 checkpoint updates, 0%
            # heap-only with the lease column indexed, 71% without (the rest change status or find the page full).
            models.Index(fields=("status",), condition=models.Q(status__in=("queued", "running", "waiting")),
                         name="run_wants_worker"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(
                    status__in=("queued", "running", "interrupted", "waiting", "completed", "failed", "cancelled")
                ),
                name="run_status_valid",
            ),
            models.UniqueConstraint(fields=("team", "runtime_id"), name="run_unique_team_runtime_id"),
        ]

    def __str__(self) -> str:
        # Names the workflow (not its id): this is the run's title in the admin and in messages.
        return f"Run {self.pk} of {self.workflow.name} ({self.get_status_display().lower()})"

    @staticmethod
    def runtime_id_for(pk: int) -> str:
        """The runtime run id of ``Run(pk)``, in the runtime's id shape (prefix and thirteen digits)."""
        return f"run_{pk:013d}"

    @property
    def input(self) -> Any:
        """The run's input (a JSON object), stored in its ``RunInput`` row; read once per instance, ``{}`` without one.

        Not a column of this row: every checkpoint, lease renewal and heartbeat updates the run's row, and SQLite
        rewrites a whole row at each update (PostgreSQL leaves an unchanged large value in TOAST). With a 100,000-item
        input (689 KB) in the row, each checkpoint wrote it again: 480 KB written per item, and the worker's CPU per
        item at 100k items was 2.3x that at 10k (bench/bench_worker_items.py)."""
        if _INPUT not in self.__dict__:
            found = RunInput.objects.filter(run_id=self.pk).values_list("value", flat=True).first() \
                if self.pk is not None else None
            self.__dict__[_INPUT] = {} if found is None else found
        return self.__dict__[_INPUT]

    @input.setter
    def input(self, value: Any) -> None:
        # Stored by the next ``save()`` (``Run.objects.create(input=...)`` sets it before its save).
        self.__dict__[_INPUT] = value
        self.__dict__[_INPUT_UNSAVED] = True

    def input_read(self, value: Any) -> None:
        """Say what the stored input is (None: the run has no ``RunInput`` row), read together with this row by
        the caller (the worker's claim): ``input`` then needs no query of its own."""
        self.__dict__[_INPUT] = {} if value is None else value

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self.__dict__.get(_INPUT_UNSAVED):
            super().save(*args, **kwargs)
            return
        with transaction.atomic(using=kwargs.get("using")):
            super().save(*args, **kwargs)
            RunInput.objects.using(kwargs.get("using")).update_or_create(
                run_id=self.pk, defaults={"value": self.__dict__[_INPUT]})
            RunValue.objects.record(run_id=self.pk, side="input", value=self.__dict__[_INPUT])
        self.__dict__[_INPUT_UNSAVED] = False

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def trace_id(self) -> str:
        """The OpenTelemetry trace id of the run (from ``traceparent``), ``""`` when it has none."""
        parts = self.traceparent.split("-")
        return parts[1] if len(parts) == 4 and len(parts[1]) == 32 else ""

    @property
    def duration_ms(self) -> int | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return int((self.finished_at - self.started_at).total_seconds() * 1000)


class RunScoped(TeamScoped):
    """A row that belongs to one run (its ``run`` field): seen by whoever may see the run."""

    team_lookup: ClassVar[str] = "run__team"
    workflow_lookup: ClassVar[str | None] = "run__workflow"

    class Meta:
        abstract = True


class RunEvent(RunScoped):
    """One trace event. For inspection only: runs resume from ``Run.run_state``, never from here.

    ``run`` has neither a foreign key constraint nor an index of its own (issue 33): a collected foreach writes four
    events an item, and the database checked each row's run (on PostgreSQL a trigger and a locking query per row,
    a third of the server's work per event) and kept an index that ``(run, seq)``'s unique one already serves. The
    only writer, ``checkpointer.append_events``, runs in a transaction that has just updated (and so locked) the
    run's row, so the run exists; deleting a run deletes its events through the ORM's cascade as before."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events", db_constraint=False,
                            db_index=False)
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=40)
    node_id = models.CharField(max_length=200, blank=True, default="")
    frame_id = models.CharField(max_length=64, blank=True, default="")
    scope_id = models.CharField(max_length=64, blank=True, default="")
    lineage_id = models.CharField(max_length=64, blank=True, default="")
    activation_id = models.CharField(max_length=64, blank=True, default="")
    index = models.IntegerField(null=True, blank=True)
    data = ExactJSONField(default=dict, blank=True)
    at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ("run_id", "seq")
        constraints = [
            models.UniqueConstraint(fields=("run", "seq"), name="runevent_unique_run_seq"),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.seq} {self.kind}"


class RunInput(RunScoped):
    """A run's input, read through ``Run.input``. Written when the run is created and never changed; a row of its own
    so that the checkpoints updating the run's row do not copy it each time (see ``Run.input``)."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, primary_key=True, related_name="+")
    value = ExactJSONField(default=dict, blank=True)

    def __str__(self) -> str:
        return f"input of run {self.run_id}"


class RunCheckpoint(RunScoped):
    """A past checkpoint of a run, kept so a new run can be forked from it (``TRELLIS_CHECKPOINT_HISTORY``).

    ``state`` is the checkpoint without its write-once parts, like ``Run.run_state``; the parts stay shared in
    ``RunStatePart`` (``RunState.parts_left_out(state)`` says which ones this checkpoint needs), so history never
    copies a foreach's items. ``Run.run_state`` stays the latest checkpoint alone.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="checkpoints")
    step = models.PositiveIntegerField()
    status = models.CharField(max_length=12)
    attempt = models.PositiveIntegerField(default=1)
    # The engine's own event counter at this checkpoint (``RunState.trace_seq``, what the runtime's
    # ``CheckpointInfo.trace_seq`` reports). Not a ``RunEvent.seq``: a distributed foreach's batches number their
    # events in the stored trace too, so stored numbers run ahead of it (``last_stored_seq`` reads those).
    engine_trace_seq = models.PositiveIntegerField()
    state = ExactJSONField()

    class Meta:
        ordering = ("run_id", "step")
        constraints = [
            models.UniqueConstraint(fields=("run", "step"), name="runcheckpoint_unique_step"),
        ]

    def __str__(self) -> str:
        return f"{self.run_id} after superstep {self.step}"


class RunStatePart(RunScoped):
    """A part of a run's checkpoint that never changes once written, stored once instead of at every superstep.

    Three kinds (``key``): ``items:<activation id>`` (the item snapshot a foreach
    takes when it starts), ``input:<scope id>`` (a scope's validated input) and
    ``list:<list id>:<chunk>`` (a full chunk of a growing list: a foreach's
    collected results, a state list written by ``append``). Rewriting them inside
    ``Run.run_state`` at every superstep made a foreach over N items cost O(N)
    per item. ``Run.run_state`` holds the rest; read a complete
    RunState through ``designer.runs.checkpointer.run_state_of(run)``.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="state_parts")
    key = models.CharField(max_length=100)
    value = ExactJSONField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=("run", "key"), name="runstatepart_unique_key"),
        ]

    def __str__(self) -> str:
        return f"{self.run_id} {self.key}"


class ForeachBatch(RunScoped):
    """One batch of a distributed foreach activation (``runtime._batches``): items ``[start, stop)``, run by its
    own task (``execute_batch``) on any worker under its own lease, like a run.

    ``pending`` (not yet enqueued: more than the node's batches in flight), ``queued``, ``running``, ``done``
    (every item has a ``ForeachBatchItem``) or ``cancelled`` (its run was cancelled).
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        CANCELLED = "cancelled", "Cancelled"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="foreach_batches")
    activation_id = models.CharField(max_length=64)
    node_id = models.CharField(max_length=200)
    number = models.PositiveIntegerField()
    start = models.PositiveIntegerField()
    stop = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    lease_owner = models.CharField(max_length=200, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    #: How many of its items have a ``ForeachBatchItem`` (result or error), written in the transaction that
    #: commits them: the run page's progress reads this, never a COUNT over the items.
    committed = models.PositiveIntegerField(default=0)
    #: While every running item of the batch sleeps in a retry's backoff or a ``wait`` step: the batch's own
    #: state (``runtime.BatchResult.state`` without the write-once parts its run already stores, plus those it
    #: does not) and when it wakes; the batch is queued for ``wake_at`` and holds no worker meanwhile.
    state = ExactJSONField(null=True, blank=True)
    wake_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("run", "activation_id", "number")
        constraints = [
            models.UniqueConstraint(fields=("run", "activation_id", "number"), name="foreachbatch_unique_number"),
        ]
        indexes = [
            models.Index(fields=("status",), condition=models.Q(status__in=("queued", "running")),
                         name="foreachbatch_live"),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.node_id} batch {self.number} [{self.start}, {self.stop}) {self.status}"


class ForeachBatchItem(RunScoped):
    """One committed item of a distributed foreach: its result, or its error. The unique key is what makes an
    item commit once: a batch restarted after its worker died runs only the indices that have no row."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    batch = models.ForeignKey(ForeachBatch, on_delete=models.CASCADE, related_name="items")
    activation_id = models.CharField(max_length=64)
    index = models.PositiveIntegerField()
    result = ExactJSONField(null=True)
    error = ExactJSONField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=("run", "activation_id", "index"), name="foreachbatchitem_unique_index"),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.activation_id}[{self.index}]"


class RunValueQuerySet(models.QuerySet):
    def record(self, *, run_id: int, side: str, value: Any) -> None:
        """Replace what is kept of one side of a run (its input when stored, its output when the run ends). Two
        SQL statements: the ORM's delete and insert were compiled at every run's end (issue 33). Up to
        ``MAX_VALUES`` rows of four parameters: within every database's limit of one statement's parameters."""
        self.forget(run_id=run_id, side=side)
        self.add(run_id=run_id, side=side, value=value)

    def forget(self, *, run_id: int, side: str) -> None:
        """Take away what is kept of one side of a run (its output, when a later end has none)."""
        connection = connections[self.db]
        table = connection.ops.quote_name(self.model._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {table} WHERE run_id = %s AND side = %s", [run_id, side])

    def add(self, *, run_id: int, side: str, value: Any) -> None:
        """``record`` for a side that has nothing kept yet (the input of a run being created): the insert alone."""
        rows = [(run_id, side, path, text) for path, text in run_values.pairs_of(value)]
        if not rows:
            return
        connection = connections[self.db]
        table = connection.ops.quote_name(self.model._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {table} (run_id, side, path, text) VALUES "
                           + ", ".join(["(%s, %s, %s, %s)"] * len(rows)), [v for row in rows for v in row])

    def run_ids_matching(self, query: run_values.ValueQuery) -> models.QuerySet:
        """The ids of the runs holding ``query``'s value at its path, for ``pk__in``."""
        path, text = query.stored()
        return self.filter(side=query.side, path=path, text=text).values("run_id")



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

    objects = RunValueQuerySet.as_manager()

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


class RecoveryChain(models.Model):
    """The one row (pk 1) that keeps recovery alive through the task queue (designer/runs/sweep.py).

    Recovery is a ``recover_runs`` task that enqueues its own successor (``run_after`` one interval later), so
    whatever process works the queue (``run_worker``, the backend's plain ``db_worker``) also recovers orphaned
    runs. ``token`` names the live chain: a sweep carrying another token was superseded and ends the old chain.
    ``due_at`` is when the next sweep should run; long past it, the chain is taken as broken and restarted.
    """

    token = models.CharField(max_length=64, blank=True, default="")
    due_at = models.DateTimeField(null=True, blank=True)
    task_result_id = models.CharField(max_length=64, blank=True, default="")
    # When a sweep last pruned by the retention policies; claimed by a conditional UPDATE, so one sweep prunes.
    pruned_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"recovery chain {self.token or '(not started)'} due {self.due_at}"
