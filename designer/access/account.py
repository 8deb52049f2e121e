"""The user's settings page: personal API tokens (create, shown once; list with last use; revoke)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.views.decorators.http import require_http_methods

from designer.access import selectors as team_selectors
from designer.access import tokens as token_services
from designer.core.errors import DesignerError
from designer.core.htmx import HtmxHttpRequest
from designer.core.pages import error_message, signed_in


def _context(request: HtmxHttpRequest, **extra: Any) -> dict[str, Any]:
    return {
        "tokens": team_selectors.tokens_of(user=request.user),
        "teams": team_selectors.teams_for(user=request.user),
        "lifetimes": token_services.LIFETIMES,
        "form": {"name": "", "days": "30", "team": "", "read_only": False},
        "error": "",
        "new_secret": "",
        **extra,
    }


@login_required
@require_http_methods(["GET", "POST"])
def api_tokens(request: HtmxHttpRequest) -> HttpResponse:
    if request.method == "GET":
        return TemplateResponse(request, "account/tokens.html", _context(request))
    form = {
        "name": request.POST.get("name", ""),
        "days": request.POST.get("days", "30"),
        "team": request.POST.get("team", ""),
        "read_only": request.POST.get("read_only") == "on",
    }
    try:
        created = token_services.create_token(actor=request.user, name=form["name"], days=form["days"],
                                              team=form["team"] or None, read_only=form["read_only"])
    except DesignerError as exc:
        return TemplateResponse(request, "account/tokens.html",
                                _context(request, form=form, error=error_message(exc)), status=400)
    # Rendered, not redirected: the secret exists only in this response (the database keeps its hash).
    response = TemplateResponse(request, "account/tokens.html",
                                _context(request, new_secret=created.secret, new_token=created.token), status=201)
    response["Cache-Control"] = "no-store"
    return response


@signed_in("POST")
def api_token_revoke(request: HtmxHttpRequest, token_id: int) -> HttpResponse:
    token = token_services.revoke_token(actor=request.user, token_id=token_id)
    messages.success(request, f"Token “{token.name}” revoked; it no longer works.")
    return redirect("api-tokens")
