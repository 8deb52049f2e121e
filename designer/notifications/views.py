"""The team's Notifications page (rules, test sends, the delivery log) and the page an answer link opens."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.template.response import TemplateResponse

from designer.access.selectors import members_of
from designer.access.team_pages import TeamPage
from designer.core.errors import BadRequest, DesignerError
from designer.core.htmx import HtmxHttpRequest
from designer.core.pages import error_message, signed_in
from designer.core.schema_form import build_form, parse_form, with_error
from designer.models import Team, Workflow
from designer.notifications import selectors
from designer.notifications import services as notification_services

ANSWER_TEMPLATE = "notifications/answer.html"


def _contents(user: Any, team: Any) -> dict[str, Any]:
    return {"rules": selectors.rules_of(user=user, team_id=team.pk),
            "members": [membership.user for membership in members_of(team)],
            "free_workflows": selectors.workflows_without_rule(user=user, team_id=team.pk),
            "deliveries": selectors.deliveries_of(user=user, team_id=team.pk)}


PAGE = TeamPage(template="notifications/page.html", partial="notifications", url_name="team-notifications",
                contents=_contents, renders_answers=True)


page = signed_in("GET")(PAGE.show)


@PAGE.form
def save(request: HtmxHttpRequest, team: Team) -> dict[str, Any]:
    workflow_id = request.POST.get("workflow", "")
    workflow = None
    if workflow_id:
        workflow = Workflow.objects.filter(team=team, pk=int(workflow_id) if workflow_id.isdigit() else 0).first()
        if workflow is None:
            raise BadRequest("choose one of this team's workflows", field="workflow")
    rule, new_secret = notification_services.save_rule(
        actor=request.user, team=team, workflow=workflow, on_failure="on_failure" in request.POST,
        on_interrupt="on_interrupt" in request.POST, on_completion="on_completion" in request.POST,
        members=request.POST.getlist("members"), webhook_url=request.POST.get("webhook_url", ""))
    whose = f"workflow {rule.workflow.name}" if rule.workflow else "the team's default"
    return {"notice": f"Notifications of {whose} saved.", "new_secret": new_secret,
            "secret_rule": rule.pk if new_secret else None}


@PAGE.form
def send_test(request: HtmxHttpRequest, team: Team, rule_id: int) -> dict[str, Any]:
    rule = selectors.get_rule(user=request.user, team_id=team.pk, rule_id=rule_id)
    sent = notification_services.send_test(actor=request.user, rule=rule)
    return {"notice": f"Test queued to {len(sent)} destination(s); the log below shows how each went."}


@PAGE.form
def delete(request: HtmxHttpRequest, team: Team, rule_id: int) -> dict[str, Any]:
    rule = selectors.get_rule(user=request.user, team_id=team.pk, rule_id=rule_id)
    notification_services.delete_rule(actor=request.user, rule=rule)
    return {"notice": "Rule deleted."}


# --- answering an interrupt from a link ------------------------------------------------------------------------------

def _question(link: Any) -> dict[str, Any]:
    return next((r for r in link.run.interrupts or [] if isinstance(r, dict) and r.get("id") == link.interrupt_id),
                {})


@signed_in("GET", "POST")
def answer(request: HtmxHttpRequest, token: str) -> HttpResponse:
    """The interrupt's form for the person the link was sent to; any refusal is a page that says why."""
    try:
        link = notification_services.open_link(token=token, actor=request.user)
    except DesignerError as exc:
        return TemplateResponse(request, ANSWER_TEMPLATE, {"refused": error_message(exc)}, status=exc.status)
    asked = _question(link)
    schema = asked.get("resume_schema") if isinstance(asked.get("resume_schema"), dict) else {}
    labels = [str(label) for label in asked.get("labels") or ["ok"]]
    context = {"link": link, "run": link.run, "asked": asked, "labels": labels, "form": build_form(schema)}
    if request.method == "GET":
        return TemplateResponse(request, ANSWER_TEMPLATE, context)
    form, value = parse_form(schema, request.POST)
    if not form.has_errors:
        try:
            notification_services.answer_by_link(link=link, actor=request.user, value=value,
                                                 label=request.POST.get("label") or None)
        except DesignerError as exc:
            if exc.status in (403, 409, 410):
                return TemplateResponse(request, ANSWER_TEMPLATE, {"refused": error_message(exc)}, status=exc.status)
            form = with_error(form, error_message(exc))
        else:
            return TemplateResponse(request, ANSWER_TEMPLATE, {**context, "answered": True})
    return TemplateResponse(request, ANSWER_TEMPLATE, {**context, "form": form}, status=400)
