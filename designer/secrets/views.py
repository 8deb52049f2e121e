"""The team's Secrets page: members see the names; owners and editors add, rotate and delete. A value is typed
once and never shown again (the forms' value fields are always empty)."""

from __future__ import annotations

from typing import Any

from designer.access.models import Team
from designer.access.team_pages import TeamPage
from designer.core.htmx import HtmxHttpRequest
from designer.core.pages import signed_in
from designer.secrets import selectors
from designer.secrets import services as secret_services

PAGE = TeamPage(
    template="secrets/page.html", partial="secrets", url_name="team-secrets",
    contents=lambda user, team: {"secrets": selectors.secrets_of(user=user, team_id=team.pk)},
    # The name and description come back; the value never does, not even into a refused form.
    kept_on_refusal=lambda request: {"typed": {"name": request.POST.get("name", ""),
                                               "description": request.POST.get("description", "")}})


page = signed_in("GET")(PAGE.show)


@PAGE.form
def create(request: HtmxHttpRequest, team: Team) -> dict[str, Any]:
    created = secret_services.create_secret(actor=request.user, team=team, name=request.POST.get("name", ""),
                                            value=request.POST.get("value", ""),
                                            description=request.POST.get("description", ""))
    return {"notice": f"Secret {created.name} saved. Its value will not be shown again."}


@PAGE.form
def rotate(request: HtmxHttpRequest, team: Team, name: str) -> dict[str, Any]:
    secret = selectors.get_secret(user=request.user, team_id=team.pk, name=name)
    secret_services.rotate_secret(actor=request.user, secret=secret, value=request.POST.get("value", ""))
    return {"notice": f"Secret {name} has a new value; runs started from now on use it."}


@PAGE.form
def delete(request: HtmxHttpRequest, team: Team, name: str) -> dict[str, Any]:
    secret = selectors.get_secret(user=request.user, team_id=team.pk, name=name)
    secret_services.delete_secret(actor=request.user, secret=secret)
    return {"notice": f"Secret {name} deleted; workflows that bind it now show an error."}
