"""Run pages: the editor's run panel, run history, and the live run detail page.

The pages call the run services and selectors directly. The detail page is
server-rendered and polled with htmx while the run is queued or running: the
``live`` partial carries ``hx-trigger`` only then, so polling stops by itself
once the run waits for an answer or ends.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_GET
from django_htmx.http import (
    HttpResponseClientRedirect,
    HttpResponseClientRefresh,
    reswap,
    retarget,
    trigger_client_event,
)

from designer.access import selectors as team_selectors
from designer.access.permissions import (
    WorkflowAccess,
    has_role,
    require_workflow_access,
    workflow_access,
)
from designer.core.errors import ActionForbidden, DesignerError, ObjectNotFound
from designer.core.filters import apply_filters
from designer.core.htmx import HtmxHttpRequest
from designer.core.pages import error_message, signed_in
from designer.core.schema_form import JSON_FIELD, MODE_FIELD, SchemaForm, build_form, parse_form, with_error
from designer.core.untrusted import parse_id
from designer.models import Run, RunEvent, Team, Workflow
from designer.runs import selectors as run_selectors
from designer.runs import services as run_services
from designer.runs.batches import batch_progress
from designer.runs.checkpointer import last_stored_seq
from designer.runs.checkpoints import context_of, damage_of, load_state, with_damage
from designer.runs.display import (
    MAX_EVENTS,
    InFlight,
    Progress,
    build_timeline,
    event_data,
    event_filters,
    nest_progress,
    progress_rows,
    recorded_context,
    short_id,
)
from designer.runs.executions import readable_error
from designer.runs.filters import RunFilter
from designer.runs.history_selectors import tolerated_failures
from designer.runs.overlay import NODE_STATES, item_label
from designer.workflows import selectors as workflow_selectors
from runtime import RunState, WorkflowError
from runtime.inspect import live_frames

PAGE_SIZE = 25
EVENTS_PAGE_SIZE = 100
RECENT_RUNS = 5
#: Seconds between polls while a run is queued or running.
POLL_SECONDS = 1
#: Most events one live poll appends (the newest ones; the page says how many it passed over).
LIVE_EVENTS = 50
ACTIVE = (Run.Status.QUEUED, Run.Status.RUNNING, Run.Status.WAITING)
#: Statuses whose run page polls: also a run waiting for its distributed foreach batches (it holds no worker,
#: but its batches commit items, counted on the row).
LIVE = ACTIVE


def _admin_runs_url(request: HtmxHttpRequest, **params: Any) -> str:
    if not request.user.is_staff:
        return ""
    try:
        url = reverse("admin:designer_run_changelist")
    except NoReverseMatch:
        return ""
    query = {key: value for key, value in params.items() if value not in (None, "")}
    return f"{url}?{urlencode(query)}" if query else url


def _error_details(exc: DesignerError | WorkflowError) -> tuple[str, dict[str, str], list[dict[str, Any]]]:
    """(message, per-field errors, diagnostics) of a service or runtime error, from its JSON form."""
    payload = exc.to_dict()
    fields: dict[str, str] = {}
    for item in payload.get("errors") or ():
        if isinstance(item, dict):
            name = str(item.get("field") or item.get("loc") or "").split(".")[0]
            if name:
                fields.setdefault(name, str(item.get("message") or item.get("msg") or ""))
    diagnostics = [d for d in payload.get("diagnostics") or () if isinstance(d, dict)]
    return error_message(exc), fields, diagnostics


# --- history -----------------------------------------------------------------------------------------------


def _filtered_runs(request: HtmxHttpRequest, qs: QuerySet[Run]) -> tuple[QuerySet[Run], dict[str, str], str]:
    """The run filters (``designer.runs.filters.RunFilter``, the API's too); a value that cannot mean anything is
    dropped (and not echoed back), with a notice saying which."""
    filtered = apply_filters(RunFilter, request.GET, qs, request=request, strict=False)
    filters = {name: filtered.values.get(name, "") for name in RunFilter.base_filters}
    return filtered.queryset, filters, filtered.notice


def filter_options(pairs: Iterable[tuple[object, str]], chosen: str) -> list[dict[str, Any]]:
    """A filter select's options (``runs/_filter_select.html``): ``(value, label)`` pairs, the one whose value is
    the filter's ``chosen`` value selected."""
    return [{"value": str(value), "label": label, "selected": str(value) == chosen} for value, label in pairs]


def _people_choices(people: Iterable[Any], chosen: str) -> list[dict[str, Any]]:
    """The "Started by" options, with the filter's value selected whether it came as an id or a username (a
    link or API-style URL may give either); a value that names none of these people stays, as given."""
    people = list(people)
    named = next((str(p.pk) for p in people if p.get_username() == chosen), chosen)
    choices = filter_options(((p.pk, p.get_username()) for p in people), named)
    if chosen and not any(choice["selected"] for choice in choices):
        choices.append({"value": chosen, "label": f"{chosen} (no one here)", "selected": True})
    return choices


def _hidden_filters(request: HtmxHttpRequest, filters: dict[str, str], url: str,
                    shown: set[str]) -> list[dict[str, str]]:
    """The applied filters this page has no control for (``/runs/?workflow=N`` from a link, say): each shown as a
    chip with what it keeps, so "No runs match" never hides its reason, and a link to the list without it."""
    hidden = []
    for name, value in filters.items():
        if not value or name in shown:
            continue
        label = value
        if name == "workflow":
            label = workflow_selectors.workflows_for(user=request.user).filter(pk=value).values_list(
                "name", flat=True).first() or f"#{value} (not one you can see)"
        elif name == "team":
            label = team_selectors.teams_for(user=request.user).filter(pk=value).values_list(
                "name", flat=True).first() or f"#{value} (not one of yours)"
        elif name == "version":
            label = "draft" if value in ("draft", "null") else f"v{value}"
        rest = QueryDict(mutable=True)
        rest.update({key: kept for key, kept in filters.items() if kept and key != name})
        hidden.append({"name": name, "value": value, "title": name.replace("_", " ").capitalize(), "label": label,
                       "remove_url": f"{url}?{rest.urlencode()}" if rest else url})
    return hidden


def _history(request: HtmxHttpRequest, *, team: Team | None = None, workflow: Workflow | None = None) -> HttpResponse:
    base = run_selectors.runs_for(user=request.user).select_related("team")
    if workflow is not None:
        base = base.filter(workflow=workflow)
    elif team is not None:
        base = base.filter(team=team)
    runs, filters, filter_notice = _filtered_runs(request, base)
    page = Paginator(runs, PAGE_SIZE).get_page(request.GET.get("page"))
    query = QueryDict(mutable=True)
    query.update({key: value for key, value in filters.items() if value})
    if workflow is not None:
        team_ids = [workflow.team_id]
    elif team is not None:
        team_ids = [team.pk]
    else:
        team_ids = list(team_selectors.teams_for(user=request.user).values_list("pk", flat=True))
    people = _people_choices(run_selectors.run_people(user=request.user, runs=base, team_ids=team_ids),
                             filters.get("created_by", ""))
    # The filters that apply here: a version on a workflow's page, a workflow on a team's, a team on "All runs".
    versions: list[tuple[object, str]] = [("draft", "Draft"), *(
        (n, f"v{n}") for n in workflow_selectors.versions_of(workflow).values_list("number", flat=True)
    )] if workflow else []
    workflows = (workflow_selectors.workflows_for(user=request.user).filter(team=team).values_list("pk", "name")
                 if team else [])
    teams = team_selectors.teams_for(user=request.user).values_list("pk", "name") if not (team or workflow) else []
    if workflow is not None:
        title, url = f"Runs of {workflow.name}", reverse("workflow-runs", args=[workflow.pk])
        admin_url = _admin_runs_url(request, workflow__id__exact=workflow.pk)
    elif team is not None:
        title, url = f"Runs in {team.name}", reverse("team-runs", args=[team.pk])
        admin_url = _admin_runs_url(request, team__id__exact=team.pk)
    else:
        title, url = "All runs", reverse("run-list")
        admin_url = _admin_runs_url(request)
    # The controls history.html shows; any other filter that applies is listed as a chip instead.
    controls = {"status", "created_by", "since", "until", "value", *(["version"] if workflow else []),
                *(["workflow"] if team else []), *(["team"] if teams else [])}
    # One read of the caller's access for the page's controls (run, sharing), not one per control.
    access = workflow_access(request.user, workflow) if workflow is not None else None
    context = {
        "title": title,
        "url": url,
        "hidden_filters": _hidden_filters(request, filters, url, controls),
        "team": team,
        "workflow": workflow,
        "page": page,
        "runs": page.object_list,
        "run_rows": with_damage(page.object_list),
        # Runs on this page that may still change: the table refreshes itself until none is left.
        "any_active": any(run.status in ACTIVE for run in page.object_list),
        "filters": filters,
        "filter_notice": filter_notice,
        "query": query.urlencode(),
        "status_options": filter_options(Run.Status.choices, filters["status"]),
        "version_options": filter_options(versions, filters["version"]),
        "people": people,
        "team_options": filter_options(teams, filters["team"]),
        "workflow_options": filter_options(workflows, filters["workflow"]),
        "admin_url": admin_url,
        "can_run": access is not None and has_role(access.role, "runner"),
        "in_own_team": access is not None and access.team_role is not None,
    }
    template = "runs/history.html#table" if request.htmx and request.htmx.target == "run-table" else "runs/history.html"
    return TemplateResponse(request, template, context)


@login_required
@require_GET
def run_list(request: HtmxHttpRequest) -> HttpResponse:
    return _history(request)


@signed_in("GET")
def team_runs(request: HtmxHttpRequest, team_id: int) -> HttpResponse:
    return _history(request, team=team_selectors.get_team(user=request.user, team_id=team_id))


@signed_in("GET")
def workflow_runs(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    return _history(request, workflow=workflow_selectors.get_workflow(user=request.user, workflow_id=workflow_id))


# --- run panel (inside the editor) ---------------------------------------------------------------------------


def _panel_document(workflow: Workflow, version: int | None) -> dict[str, Any]:
    document = workflow.document if version is None else workflow_selectors.get_version(
        workflow=workflow, number=version).document
    return document if isinstance(document, dict) else {}


def _panel_schema(workflow: Workflow, version: int | None) -> dict[str, Any]:
    schema = _panel_document(workflow, version).get("input_schema")
    return schema if isinstance(schema, dict) else {}


def _sample_input(workflow: Workflow, version: int | None) -> Any:
    """A ready-made input the author stored in the document's metadata (``metadata.sample_input``)."""
    metadata = _panel_document(workflow, version).get("metadata")
    return metadata.get("sample_input") if isinstance(metadata, dict) else None


def _version_param(raw: str | None) -> int | None:
    """The panel's version choice: a published number, or None for the draft (the form names it "draft")."""
    return None if raw in (None, "", run_services.DRAFT) else parse_id(raw)


def _panel_context(request: HtmxHttpRequest, workflow: Workflow, *, version: int | None = None,
                   form: SchemaForm | None = None, access: WorkflowAccess | None = None,
                   **extra: Any) -> dict[str, Any]:
    if access is None:
        access = workflow_access(request.user, workflow)
    role = access.role if access is not None else None
    recent = list(run_selectors.runs_for(user=request.user).filter(workflow=workflow)[:RECENT_RUNS])
    return {
        "workflow": workflow,
        "role": role,
        "can_run": has_role(role, "runner"),
        "versions": list(workflow_selectors.versions_of(workflow)),
        "version": version,
        "form": form if form is not None else build_form(_panel_schema(workflow, version),
                                                         _sample_input(workflow, version)),
        "recent": recent,
        "recent_active": any(run.status in ACTIVE for run in recent),
        "recent_rows": with_damage(recent),
        "poll_seconds": POLL_SECONDS,
        **extra,
    }


@signed_in("GET")
def run_panel(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    """The run panel; htmx asks for one part of it: ``#inputs`` (after a version change) or ``#recent`` (polling)."""
    workflow = workflow_selectors.get_workflow(user=request.user, workflow_id=workflow_id)
    version = _version_param(request.GET.get("version"))
    form = None
    if MODE_FIELD in request.GET:
        # A refresh sent what the form held: keep the values that still fit, show no errors yet.
        schema = _panel_schema(workflow, version)
        typed, value = parse_form(schema, request.GET)
        form = build_form(schema, value if value is not None else None)
        if typed.mode == "json" and not form.json_only:
            form.mode, form.json_text = "json", str(request.GET.get(JSON_FIELD, form.json_text))
    context = _panel_context(request, workflow, version=version, form=form)
    part = request.GET.get("part", "")
    template = f"runs/panel.html#{part}" if part in ("inputs", "recent") else "runs/panel.html#panel"
    if not request.htmx and not part:
        template = "runs/panel_page.html"
    return TemplateResponse(request, template, context)


@signed_in("POST")
def run_start(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    workflow = workflow_selectors.get_workflow(user=request.user, workflow_id=workflow_id)
    # Before the form: a viewer is told they cannot run. Read once, for start_run and the panel too.
    access = require_workflow_access(request.user, workflow, "runner")
    version = _version_param(request.POST.get("version"))
    form, value = parse_form(_panel_schema(workflow, version), request.POST)
    error_context: dict[str, Any] = {}
    if not form.has_errors:
        try:
            run = run_services.start_run(actor=request.user, workflow=workflow, input=value,
                                         version=run_services.DRAFT if version is None else version, access=access)
        except ActionForbidden:
            raise
        except (DesignerError, WorkflowError) as exc:
            message, fields, diagnostics = _error_details(exc)
            form = with_error(form, message, fields)
            error_context["diagnostics"] = diagnostics
        else:
            if not request.htmx:
                return redirect("run-detail", run_id=run.pk)
            context = _panel_context(request, workflow, version=version, started=run, access=access)
            return TemplateResponse(request, "runs/panel.html#panel", context)
    context = _panel_context(request, workflow, version=version, form=form, access=access, **error_context)
    template = "runs/panel.html#panel" if request.htmx else "runs/panel_page.html"
    # 400 to htmx too: base.html's htmx config swaps a 400/422 answer (the form with its errors in place).
    return TemplateResponse(request, template, context, status=400)


# --- run detail ----------------------------------------------------------------------------------------------


def _interrupts(run: Run, forms: dict[str, SchemaForm] | None = None) -> list[dict[str, Any]]:
    if run.status != Run.Status.INTERRUPTED:
        return []
    out = []
    for record in run.interrupts or []:
        if not isinstance(record, dict):
            continue
        interrupt_id = str(record.get("id") or record.get("interrupt_id") or "")
        schema = record.get("resume_schema") if isinstance(record.get("resume_schema"), dict) else {}
        labels = [str(label) for label in record.get("labels") or ["ok"]]
        out.append({
            "id": interrupt_id,
            "node_id": record.get("node_id", ""),
            "frame_id": record.get("frame_id", ""),
            "prompt": record.get("prompt", ""),
            "payload": record.get("payload"),
            "payload_fields": list(record["payload"].items()) if isinstance(record.get("payload"), dict) else [],
            "labels": labels,
            "form": (forms or {}).get(interrupt_id) or build_form(schema),
        })
    return out


def _live_frames(state: RunState | None) -> list[dict[str, Any]]:
    if state is None:
        return []
    return [
        {"id": frame.frame_id, "node_id": frame.node_id, "status": frame.status, "scope_id": frame.scope_id,
         "lineage_id": frame.lineage_id, "is_item": frame.foreach is not None}
        for frame in live_frames(state)
    ]


def _counters(run: Run) -> dict[str, Any]:
    """What a live run's page shows from the counters its checkpointer keeps on the row (``Run.progress``):
    a few small columns, whatever the size of the run."""
    progress = run.progress if isinstance(run.progress, dict) else {}
    rows = []
    for entry in progress.get("foreach") or ():
        if not isinstance(entry, dict):
            continue
        total, done, running, failed = (entry.get(key) for key in ("total", "done", "running", "failed"))
        failed = failed if isinstance(failed, int) else 0
        rows.append(Progress(
            activation_id=str(entry.get("activation_id") or ""), node_id=str(entry.get("node_id") or ""),
            # The engine counts a tolerated failed item as done: here it is failed only.
            done=max(0, done - failed) if isinstance(done, int) else 0, failed=failed,
            total=total if isinstance(total, int) else None, running=running if isinstance(running, int) else 0,
            parent_activation_id=entry.get("parent_activation_id") or None,
            parent_index=entry.get("parent_index") if isinstance(entry.get("parent_index"), int) else None))
    if run.status == Run.Status.WAITING:
        # A distributed foreach's items are committed by its batches, not by the run's checkpoints.
        # (One aggregate over the batch rows' counters: the same query whatever the number of items.)
        batches = batch_progress(run.pk)
        for row in rows:
            if row.activation_id in batches:
                row.done, row.running = batches[row.activation_id]
    # Counted from the stored trace (one step down its index), not the run's own counter: a distributed foreach's
    # batches add their items' events to it too.
    last = last_stored_seq(run.pk)
    return {
        "step": progress.get("step") if isinstance(progress.get("step"), int) else 0,
        "events": 0 if last is None else last + 1,
        "items_done": run.items_done,
        "failures": run.failures,
        "activations": progress.get("activations") if isinstance(progress.get("activations"), int) else len(rows),
        "rows": nest_progress({row.activation_id: row for row in rows}),
    }


def _timeline(run: Run, state: Any, events: list[RunEvent], now: Any) -> Any:
    in_flight = [
        InFlight(frame.frame_id, frame.lineage_id, frame.scope_id, frame.node_id)
        for frame in (state.frames.values() if state is not None and run.status in ACTIVE else ())
        if frame.status == "ready"
    ]
    return build_timeline(events, now=now, end=run.finished_at if run.is_finished else None,
                          truncated=len(events) >= MAX_EVENTS, in_flight=in_flight)


def _detail_context(request: HtmxHttpRequest, run: Run, **extra: Any) -> dict[str, Any]:
    access = run_selectors.run_access(request.user, run)
    role = access.role if access is not None else None
    inspection = load_state(run)
    damage = inspection.error
    events = list(run.events.order_by("seq")[:MAX_EVENTS])
    now = timezone.now()
    timeline = _timeline(run, inspection.state, events, now)
    scope_state = inspection.state.root_scope.state if inspection.state and "root" in inspection.state.scopes else None
    return {
        "run": run,
        "workflow": run.workflow,
        "role": role,
        "can_run": has_role(role, "runner"),
        # As delete_run requires: the editor role in the workflow's own team (a grant is not enough).
        "can_delete": access is not None and has_role(access.team_role, "editor"),
        # A damaged run is not polled: nothing a worker does will make its checkpoint readable again.
        "active": run.status in LIVE and not damage,
        "poll_seconds": POLL_SECONDS,
        # No answer form for a damaged run: its open questions belong to a state that cannot be read.
        "interrupts": [] if damage else _interrupts(run, extra.pop("forms", None)),
        "answers": _answers(run),
        "progress": progress_rows(inspection.state, events,
                                  batch_progress(run.pk) if run.status == Run.Status.WAITING else None,
                                  finished=run.is_finished),
        "counters": _counters(run),
        # The live poll asks for events from here on; the events table below already has the ones before.
        "cursor": events[-1].seq + 1 if events else 0,
        "timeline": timeline,
        "frames": _live_frames(inspection.state),
        "damage": damage,
        "final_state": scope_state,
        "attempt": inspection.state.attempt if inspection.state is not None else 1,
        # A completed run whose distributed foreach tolerated failed items can be redriven (those items only).
        "tolerated": tolerated_failures(run) if run.status == Run.Status.COMPLETED and not damage else None,
        "event_count": len(events),
        "elapsed_ms": int((now - run.started_at).total_seconds() * 1000) if run.started_at else None,
        "admin_url": _admin_runs_url(request, id__exact=run.pk),
        "preserve": True,
        # The canvas's legend: each state in words and in the colour a node in it has.
        "node_states": [(state, state.replace(" ", "-")) for state in NODE_STATES],
        # From the events read above, not read again (the error names a node, frame and scope by id).
        "readable_error": readable_error(run, events) if run.error and not damage else None,
        **extra,
    }


@signed_in("GET")
def run_detail(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    run = run_selectors.get_run(user=request.user, run_id=run_id)
    context = _detail_context(request, run)
    if context["damage"]:
        return _damaged(request, run, context)
    if request.htmx and request.htmx.target == "run-live":
        return _live_response(request, context)
    context.update(_events_context(request, run))
    return TemplateResponse(request, "runs/detail.html", context)


@signed_in("GET")
def run_live(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    """One poll of a live run: its counters and the events since ``?since=`` (at most ``LIVE_EVENTS``).

    It reads the run row's small columns and one bounded range of events, so a poll of a 100k-item run costs
    what a poll of a 10-item run costs. Once the run waits or ends the page reloads (``HX-Refresh``) to show
    its timeline, state and output, which are read once, not per poll.
    """
    run = run_selectors.get_live_run(user=request.user, run_id=run_id)
    if run.status not in LIVE:
        return HttpResponseClientRefresh()
    since = max(0, parse_id(request.GET.get("since")) or 0)
    new_events, skipped = run_selectors.events_since(run=run, since=since, limit=LIVE_EVENTS)
    context = {
        "run": run,
        "counters": _counters(run),
        "cursor": new_events[-1].seq + 1 if new_events else since,
        "new_events": new_events,
        "skipped": skipped,
        "poll_seconds": POLL_SECONDS,
        "oob": True,
    }
    response = TemplateResponse(request, "runs/detail.html#poll", context)
    # New steps: the timeline and the events table fetch themselves again (each at most every few seconds).
    return trigger_client_event(response, "run-progress") if new_events else response


@signed_in("GET")
def run_timeline(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    """The run page's timeline alone: what a live page swaps in as steps start and end, with no reload."""
    run = run_selectors.get_run(user=request.user, run_id=run_id)
    inspection = load_state(run)
    if inspection.error:
        return _damaged(request, run)
    if not request.htmx:
        return redirect(reverse("run-detail", args=[run.pk]) + "#timeline")
    events = list(run.events.order_by("seq")[:MAX_EVENTS])
    context = {"run": run, "active": run.status in LIVE,
               "timeline": _timeline(run, inspection.state, events, timezone.now())}
    return TemplateResponse(request, "runs/detail.html#timeline", context)


def _damaged(request: HtmxHttpRequest, run: Run, context: dict[str, Any] | None = None) -> HttpResponse:
    """409 for any view of a run whose checkpoint is damaged: the run page shows it as damaged, with the reason.

    htmx does not swap a 409 into the page, so an htmx request is told to reload it (``HX-Refresh``): the
    reloaded page is the damaged one, whatever fragment asked.
    """
    if request.htmx:
        response = HttpResponseClientRefresh()
        response.status_code = 409
        return response
    if context is None:
        context = _detail_context(request, run)
    context.update(_events_context(request, run))
    return TemplateResponse(request, "runs/detail.html", context, status=409)


def _live_response(request: HtmxHttpRequest, context: dict[str, Any]) -> TemplateResponse:
    # The events table refreshes with the live region, so both show the same moment of the run.
    return trigger_client_event(TemplateResponse(request, "runs/detail.html#live", context), "run-progress")


def _events_context(request: HtmxHttpRequest, run: Run) -> dict[str, Any]:
    qs: QuerySet[RunEvent] = run.events.order_by("seq")
    # Without its ordering: DISTINCT over (kind, node, seq) was one row per event, the whole trace for the selects.
    kinds, nodes = event_filters(list(qs.order_by().values_list("kind", "node_id").distinct()))
    kind, node, lineage = (request.GET.get(name, "").strip() for name in ("kind", "node", "lineage"))
    if kind:
        qs = qs.filter(kind=kind)
    if node:
        qs = qs.filter(node_id=node)
    if lineage:
        qs = qs.filter(lineage_id=lineage)
    page = Paginator(qs, EVENTS_PAGE_SIZE).get_page(request.GET.get("page"))
    first = run.events.order_by("seq").values_list("at", flat=True).first()
    rows = [
        {"event": event, "offset_ms": int((event.at - first).total_seconds() * 1000) if first else 0,
         "data": event_data(event), "summary": event_data(event).get("summary")}
        for event in page.object_list
    ]
    query = urlencode({key: value for key, value in (("kind", kind), ("node", node), ("lineage", lineage)) if value})
    return {"events_page": page, "event_rows": rows, "kind_options": filter_options(((k, k) for k in kinds), kind),
            "node_options": filter_options(((n, n) for n in nodes), node),
            "event_filter": {"kind": kind, "node": node, "lineage": lineage}, "events_query": query,
            "run": run, "active": run.status in LIVE}


@signed_in("GET")
def run_events(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    """The events table (filtered, paged); polled with the page while the run is active."""
    run = run_selectors.get_run(user=request.user, run_id=run_id)
    if damage_of(run):
        return _damaged(request, run)
    if not request.htmx:
        query = request.GET.urlencode()
        return redirect(reverse("run-detail", args=[run.pk]) + (f"?{query}" if query else "") + "#events")
    return TemplateResponse(request, "runs/detail.html#events", _events_context(request, run))


def _answers(run: Run) -> list[dict[str, Any]]:
    """Who answered which question, oldest first."""
    out = []
    for record in run.answers or []:
        if not isinstance(record, dict):
            continue
        at = parse_datetime(str(record.get("at") or ""))
        out.append({**record, "at": at, "node_name": _node_name(run, str(record.get("node_id") or ""))})
    return out


def _node_name(run: Run, node_id: str) -> str:
    nodes = run.document.get("nodes", []) if isinstance(run.document, dict) else []
    node = next((n for n in nodes if isinstance(n, dict) and n.get("id") == node_id), None)
    return str(node.get("name") or node_id) if node else node_id


@signed_in("GET")
def run_frame(request: HtmxHttpRequest, run_id: int, frame_id: str) -> HttpResponse:
    """One frame: its steps in the trace and its structured context, derived by the runtime."""
    run = run_selectors.get_run(user=request.user, run_id=run_id)
    inspection = load_state(run)
    if inspection.error:
        return _damaged(request, run)
    events = list(run.events.filter(frame_id=frame_id).order_by("seq")[:200])
    if not events and (inspection.state is None or frame_id not in inspection.state.frames):
        raise ObjectNotFound(f"run {run.pk} has no frame {frame_id!r}")
    live = context_of(inspection.state, frame_id)
    frame = inspection.state.frames.get(frame_id) if inspection.state else None
    first = events[0] if events else None
    shown = live if live is not None else recorded_context(events)
    foreach = (shown or {}).get("foreach")
    # The step that was clicked names the node: a live frame may have moved on to another node since.
    clicked = next((e for e in events if str(e.seq) == request.GET.get("seq", "")), None)
    node_id = clicked.node_id if clicked else (frame.node_id if frame else (first.node_id if first else ""))
    context = {
        "run": run,
        "frame_id": frame_id,
        "frame": frame,
        "node_id": node_id,
        "node_name": _node_name(run, node_id),
        "item_label": item_label(shown) if foreach else "",
        "lineage_id": frame.lineage_id if frame else (first.lineage_id if first else ""),
        "scope_id": frame.scope_id if frame else (first.scope_id if first else ""),
        "frame_events": events,
        "frame_context": shown,
        "foreach_entries": list(foreach.items()) if isinstance(foreach, dict) else [],
        "context_extras": [(key, value) for key, value in (shown or {}).items() if key != "foreach"],
        "context_source": "live" if live is not None else "trace",
        "focus_seq": request.GET.get("seq", ""),
        "short_frame": short_id(frame_id),
    }
    if request.htmx:
        return TemplateResponse(request, "runs/detail.html#frame", context)
    return TemplateResponse(request, "runs/panel_as_page.html",
                            {**context, "panel": "runs/detail.html#frame", "page_title": f"Frame {short_id(frame_id)}"})


@signed_in("POST")
def run_resume(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    interrupt_id = request.POST.get("interrupt_id", "")
    run: Run | None = None
    form: SchemaForm | None = None
    damaged, answered = False, False
    try:
        # One read of the run, locked: the question is looked up, its form checked and the answer stored on the
        # run as it is, all or nothing (a refused answer writes nothing).
        with transaction.atomic():
            run = run_selectors.lock_run(user=request.user, run_id=run_id)
            damaged = bool(damage_of(run))
            record = None if damaged else next((item for item in _interrupts(run) if item["id"] == interrupt_id),
                                               None)
            if damaged:
                run_services.runner_on(request.user, run)  # as resume_run does
            elif record is not None:
                schema: Any = next((r.get("resume_schema") for r in run.interrupts if isinstance(r, dict)
                                    and str(r.get("id") or r.get("interrupt_id")) == interrupt_id), {})
                form, value = parse_form(schema, request.POST)
                if not form.has_errors:
                    run = run_services.resume_locked(actor=request.user, run=run, interrupt_id=interrupt_id,
                                                     value=value, label=request.POST.get("label") or None)
                    answered = True
    except ActionForbidden:
        raise
    except (DesignerError, WorkflowError) as exc:
        if run is None or form is None:  # not found (404), or refused before any answer was looked at
            raise
        message, fields, _ = _error_details(exc)
        form = with_error(form, message, fields)
    assert run is not None  # lock_run raised otherwise
    if damaged:
        return _damaged(request, run)
    if form is None:
        # Answered or cancelled meanwhile: show the run as it is now.
        return _after_action(request, run, notice="That question is no longer open.")
    if answered:
        return _after_action(request, run)
    if request.htmx:
        context = _detail_context(request, run, forms={interrupt_id: form})
        item = next(i for i in context["interrupts"] if i["id"] == interrupt_id)
        response = TemplateResponse(request, "runs/detail.html#interrupt",
                                    {**context, "interrupt": item, "preserve": False}, status=400)
        # Only this form changes: the rest of the page (and other open questions) stay as they are.
        return reswap(retarget(response, f"#interrupt-{interrupt_id}"), "outerHTML")
    return TemplateResponse(request, "runs/detail.html",
                            {**_detail_context(request, run, forms={interrupt_id: form}),
                             **_events_context(request, run)}, status=400)


@signed_in("POST")
def run_cancel(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    try:
        run = run_services.cancel_run(actor=request.user, run=run_id)
    except (ActionForbidden, ObjectNotFound):
        raise
    except DesignerError as exc:
        return _after_action(request, None, run_id=run_id, notice=error_message(exc))
    return _after_action(request, run, notice="Cancel requested." if run.status == "running" else "Run cancelled.")


@signed_in("POST")
def run_delete(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    """Delete a run (a damaged one included) and go to its workflow's run history."""
    run = run_selectors.get_run(user=request.user, run_id=run_id)
    try:
        run_services.delete_run(actor=request.user, run=run)
    except ActionForbidden:
        raise
    except DesignerError as exc:
        return _after_action(request, run, notice=error_message(exc))
    url = reverse("workflow-runs", args=[run.workflow_id])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def _after_action(request: HtmxHttpRequest, run: Run | None, notice: str = "", *, run_id: int = 0) -> HttpResponse:
    """The run page's live part after an action (htmx), or a redirect to the run's page. ``run``: the run as the
    action left it (read under its lock, then written), or None to read it (``run_id``) after a refusal."""
    if request.htmx:
        if run is None:
            run = run_selectors.get_run(user=request.user, run_id=run_id)
        return _live_response(request, _detail_context(request, run, notice=notice))
    return redirect("run-detail", run_id=run.pk if run is not None else run_id)
