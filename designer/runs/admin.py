"""Admin for run history: filter by status, team, workflow and date; the trace's first events inline, read-only;
payloads and the RunState shown as indented JSON; an action to cancel runs. Each run links to its queue task
(``task_result_id``), and the recovery chain's one row (``RecoveryChain``) is shown read-only.

A run whose checkpoint is damaged is marked in the list, and its page answers 409 with the reason, showing the
stored value as it is (never a partly read state); cancel and delete work on it like on any run."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html
from django_tasks_db.models import DBTaskResult

from designer.core.admin import ReadOnly, json_field
from designer.core.errors import DesignerError
from designer.core.json_text import pretty_json_html
from designer.models import RecoveryChain, Run, RunEvent
from designer.runs import budgets as run_budgets
from designer.runs.checkpointer import last_stored_seq
from designer.runs.checkpoints import Checkpoint, checkpoint_of, with_damage
from designer.runs.services import cancel
from runtime.errors import CorruptRunStateError


def task_result_link(result_id: str) -> str:
    """A queue task's id, linked to its row in the admin while the queue still has it."""
    if not result_id:
        return "—"
    if not DBTaskResult.objects.filter(pk=result_id).exists():
        return f"{result_id} (no longer in the queue)"
    url = reverse(f"admin:{DBTaskResult._meta.app_label}_{DBTaskResult._meta.model_name}_change", args=[result_id])
    return format_html('<a href="{}">{}</a>', url, result_id)


#: Trace events the run's admin page shows: a 100k-item run stores 400k, which the page rendered every one of.
ADMIN_EVENTS = 100


class FirstEvents(BaseInlineFormSet):  # type: ignore[type-arg]
    """The run's first ``ADMIN_EVENTS`` events only (the inline is read-only, so a slice is all it needs)."""

    def get_queryset(self) -> QuerySet[RunEvent]:
        # The same sliced queryset every time, read once: the formset indexes it once per form, and a fresh
        # slice each call was one query per event shown (64 for a run of 16 events).
        if not hasattr(self, "_first_events"):
            self._first_events = super().get_queryset()[:ADMIN_EVENTS]
            len(self._first_events)
        return self._first_events


class RunEventInline(ReadOnly, admin.TabularInline):
    model = RunEvent
    formset = FirstEvents
    verbose_name_plural = f"run events (the first {ADMIN_EVENTS})"
    extra = 0
    can_delete = False
    ordering = ("seq",)
    fields = ("seq", "kind", "node_id", "frame_id", "activation_id", "index", "at", "duration_ms", "data_json")
    readonly_fields = fields
    show_change_link = False

    data_json = json_field("data", "data")


_DAMAGE = "_trellis_damage"  # a changelist row's damage, read once for the page
_CHECKPOINT = "_trellis_checkpoint"  # a run page's checkpoint (or why it is damaged), read once for the page


def _checkpoint(run: Run) -> Checkpoint | CorruptRunStateError | None:
    """The run's checkpoint, or the error that says why it is damaged, read once per run object: the page's
    damage, attempt and RunState fields and the 409 check all need it (four reads of the stored parts before)."""
    if _CHECKPOINT not in run.__dict__:
        try:
            run.__dict__[_CHECKPOINT] = checkpoint_of(run)
        except CorruptRunStateError as exc:
            run.__dict__[_CHECKPOINT] = exc
    found: Checkpoint | CorruptRunStateError | None = run.__dict__[_CHECKPOINT]
    return found


def _damage(run: Run) -> str:
    found = _checkpoint(run)
    return found.message if isinstance(found, CorruptRunStateError) else ""


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "workflow", "team", "version", "status", "damage", "created_by", "created_at", "duration")
    list_filter = ("status", "team", "workflow", "created_at")
    list_select_related = ("workflow", "team", "workflow_version", "created_by")
    date_hierarchy = "created_at"
    search_fields = ("=id", "workflow__name", "workflow__slug", "team__name", "created_by__username")
    ordering = ("-created_at", "-id")
    actions = ("cancel_runs",)
    inlines = (RunEventInline,)
    fieldsets = (
        (None, {"fields": ("team", "workflow", "workflow_version", "status", "created_by", "cancel_requested",
                           "events")}),
        ("Timing", {"fields": ("created_at", "started_at", "finished_at", "duration", "attempt", "worker_claims",
                               "budgets")}),
        ("Payloads", {"fields": ("input_json", "output_json", "error_json", "interrupts_json",
                                 "resume_request_json")}),
        ("Execution", {"fields": ("damage", "task_result", "lease_owner", "lease_expires_at", "run_state_json",
                                  "document_json"),
                       "classes": ("collapse",)}),
    )
    readonly_fields = (
        "team", "workflow", "workflow_version", "status", "created_by", "cancel_requested", "created_at",
        "started_at", "finished_at", "duration", "attempt", "worker_claims", "input_json", "output_json", "error_json",
        "interrupts_json", "resume_request_json", "damage", "task_result", "lease_owner", "lease_expires_at",
        "run_state_json", "document_json", "events", "budgets",
    )

    @admin.display(description="budgets")
    def budgets(self, run: Run) -> str:
        """What the run's budgets are and how much of its step-seconds it used (designer/runs/budgets.py)."""
        budget = run_budgets.budget_for(run)
        used = f"{run.step_seconds_used:.1f} step-seconds used"
        if budget is None:
            return f"{used}; no budgets"
        limits = [f"{budget.total_step_seconds:g} step-seconds" if budget.total_step_seconds else "",
                  f"{budget.wall_seconds:g} s of wall time" if budget.wall_seconds else ""]
        return f"{used} of {' and '.join(limit for limit in limits if limit)}"

    @admin.display(description="attempt")
    def attempt(self, run: Run) -> str:
        """The run's attempt as the run page counts it (1, then one more per redrive), from its RunState."""
        found = _checkpoint(run)
        return str(found.state.attempt) if isinstance(found, Checkpoint) else "—"

    @admin.display(description="worker claims")
    def worker_claims(self, run: Run) -> int:
        # Run.attempts counts workers that took the run (a dead worker's run is taken again), which the admin used
        # to call "Attempts" beside the run page's redrive attempt: two numbers under one name.
        return run.attempts

    @admin.display(description="trace")
    def events(self, run: Run) -> str:
        last = last_stored_seq(run.pk)
        stored = 0 if last is None else last + 1
        shown = f"the first {ADMIN_EVENTS} below" if stored > ADMIN_EVENTS else "all below"
        return format_html('{} events stored ({}); <a href="{}">every one, filtered and paged, on the run page</a>',
                           stored, shown, reverse("run-detail", args=[run.pk]))

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        changelist = super().get_changelist_instance(request)
        # One query for the stored parts of the whole page rather than one per row; kept on the row objects
        # of this request (the ModelAdmin itself is shared between requests).
        for run, damage in with_damage(changelist.result_list):
            run.__dict__[_DAMAGE] = damage or ""
        return changelist

    @admin.display(description="damage")
    def damage(self, run: Run) -> str:
        reason = run.__dict__[_DAMAGE] if _DAMAGE in run.__dict__ else _damage(run)
        if not reason:
            return "—"
        return format_html('<strong class="errornote" title="runstate.corrupt">damaged</strong> {}', reason)

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        response = super().change_view(request, object_id, form_url, extra_context)
        # The run the page shows (its fields render after this, from the same object and its one checkpoint read).
        run = getattr(response, "context_data", None) and response.context_data.get("original")
        if isinstance(run, Run) and response.status_code == 200 and _damage(run):
            response.status_code = 409  # the run page of a damaged run, as everywhere else
        return response

    @admin.display(description="version", ordering="workflow_version__number")
    def version(self, run: Run) -> str:
        return f"v{run.workflow_version.number}" if run.workflow_version_id else "draft"

    @admin.display(description="duration")
    def duration(self, run: Run) -> str:
        ms = run.duration_ms
        if ms is None:
            return "—"
        return f"{ms} ms" if ms < 1000 else f"{ms / 1000:.1f} s"

    input_json = json_field("input", "input")
    output_json = json_field("output", "output")
    error_json = json_field("error", "error")
    interrupts_json = json_field("interrupts", "interrupts")
    resume_request_json = json_field("resume_request", "pending resume")

    @admin.display(description="RunState (latest checkpoint)")
    def run_state_json(self, run: Run) -> str:
        found = _checkpoint(run)
        if isinstance(found, CorruptRunStateError):
            return format_html("<p>Damaged; the stored value as it is:</p>{}", pretty_json_html(run.run_state))
        return pretty_json_html(found.data if found is not None else None)

    document_json = json_field("document", "document")

    @admin.display(description="queue task")
    def task_result(self, run: Run) -> str:
        return task_result_link(run.task_result_id)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # runs start through the API, which snapshots and enqueues them

    @admin.action(description="Cancel selected runs")
    def cancel_runs(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        done = 0
        for run in queryset.exclude(status__in=Run.FINISHED):
            try:
                cancel(run_id=run.pk)
            except DesignerError as exc:
                self.message_user(request, f"run {run.pk}: {exc.message}", messages.WARNING)
            else:
                done += 1
        self.message_user(request, f"cancelled or flagged {done} run(s)", messages.SUCCESS)


@admin.register(RecoveryChain)
class RecoveryChainAdmin(ReadOnly, admin.ModelAdmin):
    """The recovery chain's one row, to see at a glance whether recovery is alive; only sweeps write it."""

    list_display = ("token", "due_at", "sweep_task")
    fields = ("token", "due_at", "sweep_task")
    readonly_fields = fields

    @admin.display(description="next sweep task")
    def sweep_task(self, chain: RecoveryChain) -> str:
        return task_result_link(chain.task_result_id)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
