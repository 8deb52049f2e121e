"""Run page actions on a run's history: redrive, re-run, pick a past checkpoint from the trace, fork from it.

The checkpoint panel opens in the run page's drawer (``#frame-panel``) from a
step number in the events table, so the trace is the picker. Everything is
checked by the run services (and through them by the runtime); a refused
edit re-renders the panel with the error next to the field, 400.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from designer.access.permissions import has_role
from designer.core.errors import ActionForbidden, BadRequest, DesignerError
from designer.core.htmx import HtmxHttpRequest
from designer.core.json_text import pretty_json
from designer.core.pages import error_message, signed_in
from designer.core.schema_form import SchemaForm, build_form, parse_form, with_error
from designer.core.untrusted import form_json
from designer.runs import history as run_history
from designer.runs import selectors as run_selectors
from designer.runs.history_selectors import checkpoint_detail
from designer.runs.views import _error_details
from runtime import WorkflowError


def _go(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    url = reverse("run-detail", args=[run_id])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def _json(text: str, field: str) -> tuple[Any, str]:
    """``(value, "")``, or ``(None, message)`` naming the field and where the JSON breaks."""
    try:
        return form_json(text, field=field, what=field), ""
    except BadRequest as exc:
        return None, exc.message


def _field_errors(exc: DesignerError | WorkflowError) -> list[str]:
    errors = exc.details.get("errors") if isinstance(exc.details, dict) else None
    return [f"{e.get('field') or '(root)'}: {e.get('message')}" for e in errors or [] if isinstance(e, dict)]


@signed_in("POST")
def run_redrive(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    run = run_history.redrive_run(actor=request.user, run=run_id)  # reads the run once, locked
    return _go(request, run.pk)


@signed_in("POST")
def run_rerun(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    run = run_selectors.get_run(user=request.user, run_id=run_id)
    raw = request.POST.get("input", "")
    text, version = raw.strip(), request.POST.get("version", "same")
    run_input, problem = _json(text, "input") if text else (None, "")
    field_errors: list[str] = []
    if not problem:
        try:
            new = run_history.rerun(actor=request.user, run=run, input=run_input, version=version)
        except ActionForbidden:
            raise
        except (DesignerError, WorkflowError) as exc:
            problem, field_errors = error_message(exc), _field_errors(exc)
        else:
            return _go(request, new.pk)
    # The re-run form again, with what was typed and the error in place (400; htmx swaps it, see base.html).
    context = {"run": run, "can_run": True, "rerun_error": problem, "rerun_text": raw,
               "rerun_field_errors": field_errors, "rerun_version": version}
    if request.htmx:
        return TemplateResponse(request, "runs/detail.html#rerun_form", context, status=400)
    return HttpResponse(problem, status=400, content_type="text/plain")


def _answer_prefix(interrupt_id: str) -> str:
    """The field-name prefix of one open question's answer form in the fork form (several may be open)."""
    return f"answer-{interrupt_id}."


def _answer_data(post: Any, interrupt_id: str) -> dict[str, str]:
    prefix = _answer_prefix(interrupt_id)
    return {key[len(prefix):]: post.get(key) for key in post if key.startswith(prefix)}


def _can_run(request: HtmxHttpRequest, run: Any) -> bool:
    access = run_selectors.run_access(request.user, run)
    return access is not None and has_role(access.role, "runner")


def _panel(request: HtmxHttpRequest, run: Any, step: int, *, status: int = 200,
           bound: dict[str, SchemaForm] | None = None, **extra: Any) -> HttpResponse:
    row = run_history.kept_checkpoint(run, step)
    detail = checkpoint_detail(row)
    # Each open question gets the form the run page answers it with, typed by its resume schema.
    answers = [{"interrupt": item, "prefix": _answer_prefix(item["interrupt_id"]),
                "form": (bound or {}).get(item["interrupt_id"]) or build_form(item["resume_schema"])}
               for item in detail["interrupts"]]
    context = {
        "run": run, "cp": detail, "can_run": _can_run(request, run),
        "state_text": extra.pop("state_text", None) or pretty_json(detail["state"]),
        "answers": answers,
        **extra,
    }
    if request.htmx:
        return TemplateResponse(request, "runs/checkpoint.html", context, status=status)
    # A step link opened in a tab of its own (or without htmx): the panel inside the site's page.
    return TemplateResponse(request, "runs/panel_as_page.html", {
        **context, "panel": "runs/checkpoint.html", "page_title": f"After superstep {step}"}, status=status)


@signed_in("GET")
def run_checkpoint(request: HtmxHttpRequest, run_id: int, step: int) -> HttpResponse:
    """The kept checkpoint after superstep ``step``: state, each live frame's context, and the fork form."""
    run = run_selectors.get_run(user=request.user, run_id=run_id)
    return _panel(request, run, step)


@signed_in("POST")
def run_fork(request: HtmxHttpRequest, run_id: int, step: int) -> HttpResponse:
    run = run_selectors.get_run(user=request.user, run_id=run_id)
    state_text = request.POST.get("state", "")
    detail = checkpoint_detail(run_history.kept_checkpoint(run, step))
    original = detail["state"]
    state, problem = _json(state_text, "state") if state_text.strip() else (None, "")
    answer = None
    interrupt_id = request.POST.get("interrupt_id", "")
    bound: dict[str, SchemaForm] = {}
    if interrupt_id:
        # The answer comes from the question's schema form (fields or whole-value JSON), as on the run page.
        schema = next((i["resume_schema"] for i in detail["interrupts"] if i["interrupt_id"] == interrupt_id), None)
        if schema is None:
            problem = problem or f"no question {interrupt_id!r} is open at superstep {step}"
        else:
            data = _answer_data(request.POST, interrupt_id)
            form, value = parse_form(schema, data)
            bound[interrupt_id] = form
            if form.has_errors:
                problem = problem or "the answer has errors: see the question's form"
            answer = {"interrupt_id": interrupt_id, "value": value, "label": data.get("label") or None}
    if problem:
        return _panel(request, run, step, status=400, state_text=state_text, error=problem, bound=bound,
                      interrupt_id=interrupt_id)
    try:
        new = run_history.fork_run(actor=request.user, run=run, step=step,
                                   state=None if state == original else state, answer=answer)
    except ActionForbidden:
        raise
    except (DesignerError, WorkflowError) as exc:
        if interrupt_id in bound and exc.details.get("field") == "answer":
            # The resume schema refused the answer: its complaints go next to the question's fields.
            message, fields, _ = _error_details(exc)
            bound[interrupt_id] = with_error(bound[interrupt_id], message, fields)
        return _panel(request, run, step, status=400, state_text=state_text, error=error_message(exc),
                      field_errors=_field_errors(exc), interrupt_id=interrupt_id, bound=bound)
    return _go(request, new.pk)
