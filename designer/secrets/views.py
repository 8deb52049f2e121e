"""The team's Secrets page: members see the names; owners and editors add, rotate and delete. A value is typed
once and never shown again (the forms' value fields are always empty)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse

from designer.access import selectors as team_selectors
from designer.access.permissions import has_role, role_of
from designer.core.errors import DesignerError
from designer.core.htmx import HtmxHttpRequest
from designer.core.pages import error_message, signed_in
from designer.secrets import selectors
from designer.secrets import services as secret_services

TEMPLATE = "secrets/page.html"


def _context(request: HtmxHttpRequest, team: Any, **extra: Any) -> dict[str, Any]:
    role = role_of(request.user, team)
    return {"team": team, "role": role, "can_edit": has_role(role, "editor"),
            "secrets": selectors.secrets_of(user=request.user, team_id=team.pk), **extra}


def _answer(request: HtmxHttpRequest, team: Any, *, status: int = 200, **extra: Any) -> HttpResponse:
    if request.htmx:
        return TemplateResponse(request, f"{TEMPLATE}#secrets", _context(request, team, **extra), status=status)
    if status >= 400:
        return TemplateResponse(request, TEMPLATE, _context(request, team, **extra), status=status)
    return redirect("team-secrets", team_id=team.pk)


@signed_in("GET")
def page(request: HtmxHttpRequest, team_id: int) -> HttpResponse:
    team = team_selectors.get_team(user=request.user, team_id=team_id)
    return TemplateResponse(request, TEMPLATE, _context(request, team))


@signed_in("POST")
def create(request: HtmxHttpRequest, team_id: int) -> HttpResponse:
    team = team_selectors.get_team(user=request.user, team_id=team_id)
    try:
        created = secret_services.create_secret(actor=request.user, team=team, name=request.POST.get("name", ""),
                                                value=request.POST.get("value", ""),
                                                description=request.POST.get("description", ""))
    except DesignerError as exc:
        # The name and description come back; the value never does, not even into a refused form.
        return _answer(request, team, status=exc.status, error=error_message(exc),
                       typed={"name": request.POST.get("name", ""),
                              "description": request.POST.get("description", "")})
    return _answer(request, team, notice=f"Secret {created.name} saved. Its value will not be shown again.")


def _change(request: HtmxHttpRequest, team_id: int, name: str, change: Any, notice: str) -> HttpResponse:
    """Rotate or delete: ``change(secret)`` on the named secret of the team, answered with the page's partial."""
    team = team_selectors.get_team(user=request.user, team_id=team_id)
    try:
        change(selectors.get_secret(user=request.user, team_id=team.pk, name=name))
    except DesignerError as exc:
        return _answer(request, team, status=exc.status, error=error_message(exc))
    return _answer(request, team, notice=notice)


@signed_in("POST")
def rotate(request: HtmxHttpRequest, team_id: int, name: str) -> HttpResponse:
    return _change(request, team_id, name, lambda secret: secret_services.rotate_secret(
        actor=request.user, secret=secret, value=request.POST.get("value", "")),
        f"Secret {name} has a new value; runs started from now on use it.")


@signed_in("POST")
def delete(request: HtmxHttpRequest, team_id: int, name: str) -> HttpResponse:
    return _change(request, team_id, name, lambda secret: secret_services.delete_secret(
        actor=request.user, secret=secret), f"Secret {name} deleted; workflows that bind it now show an error.")
