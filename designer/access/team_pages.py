"""A team's settings page whose forms post back to it (Secrets, Notifications): one way to show it and to answer
its forms, so each such page says only what it lists and what its forms do."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.http import HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse

from designer.access import selectors as team_selectors
from designer.access.permissions import has_role, role_of
from designer.core.errors import DesignerError
from designer.core.htmx import HtmxHttpRequest
from designer.core.pages import error_message, signed_in


@dataclass(frozen=True, slots=True)
class TeamPage:
    #: The page's template; its forms re-render the partial ``<template>#<partial>`` in place.
    template: str
    partial: str
    #: The page's URL name (it takes ``team_id``): where a form posted without htmx comes back to.
    url_name: str
    #: What the page lists, for the signed-in user: ``contents(user, team)``.
    contents: Callable[[Any, Any], dict[str, Any]]
    #: A form posted without htmx answers with the page itself rather than a redirect to it, so that what it
    #: shows once (a new signing secret) reaches the person.
    renders_answers: bool = False
    #: What a refused form shows again of what was typed, from the request (never a secret's value).
    kept_on_refusal: Callable[[HtmxHttpRequest], dict[str, Any]] | None = None

    def context(self, request: HtmxHttpRequest, team: Any, **extra: Any) -> dict[str, Any]:
        role = role_of(request.user, team)
        return {"team": team, "role": role, "can_edit": has_role(role, "editor"),
                **self.contents(request.user, team), **extra}

    def show(self, request: HtmxHttpRequest, team_id: int) -> HttpResponse:
        team = team_selectors.get_team(user=request.user, team_id=team_id)
        return TemplateResponse(request, self.template, self.context(request, team))

    def answer(self, request: HtmxHttpRequest, team: Any, *, status: int = 200, **extra: Any) -> HttpResponse:
        """A form's answer: htmx gets the page's partial; a refused form, the whole page with its error."""
        if request.htmx:
            return TemplateResponse(request, f"{self.template}#{self.partial}", self.context(request, team, **extra),
                                    status=status)
        if status >= 400 or (self.renders_answers and extra):
            return TemplateResponse(request, self.template, self.context(request, team, **extra), status=status)
        return redirect(self.url_name, team_id=team.pk)

    def form(self, handle: Callable[..., dict[str, Any]]) -> Callable[..., HttpResponse]:
        """The view of one of the page's forms (a signed-in POST): ``handle(request, team, **url_kwargs)`` makes the
        change and returns what the answer shows (its ``notice``); a ``DesignerError`` it raises is the refused
        form's error."""

        @signed_in("POST")
        @functools.wraps(handle)
        def view(request: HtmxHttpRequest, team_id: int, **kwargs: Any) -> HttpResponse:
            team = team_selectors.get_team(user=request.user, team_id=team_id)
            try:
                shown = handle(request, team, **kwargs)
            except DesignerError as exc:
                kept = self.kept_on_refusal(request) if self.kept_on_refusal else {}
                return self.answer(request, team, status=exc.status, error=error_message(exc), **kept)
            return self.answer(request, team, **shown)

        return view
