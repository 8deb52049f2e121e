"""Team pages: your teams, members and roles (a workflow's sharing page is ``designer/workflows/sharing.py``).

Every change goes through ``designer.access.teams`` / ``invitations`` (which
check roles); every read goes through the selectors (which scope to the
caller's teams). Member forms post with htmx and get the members partial back;
without htmx they redirect, so the pages also work as plain forms.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth import login as auth_login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.db.models import Count
from django.http import HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from designer.access import invitations as invitation_services
from designer.access import selectors as team_selectors
from designer.access import teams as team_services
from designer.access.permissions import (
    ACTIONS,
    has_role,
)
from designer.core.errors import ActionForbidden, DesignerError, ObjectNotFound
from designer.core.htmx import HtmxHttpRequest
from designer.core.pages import designer_errors, error_message, signed_in
from designer.models import Membership, Run, Team

ROLE_CHOICES = Membership.Role.choices


class SignUpForm(UserCreationForm):
    """A new account from an invitation link: username and password (checked by the password validators);
    the email is the invitation's, shown but not editable."""

    email = forms.EmailField(disabled=True, required=False)


@login_required
@require_http_methods(["GET", "POST"])
def team_list(request: HtmxHttpRequest) -> HttpResponse:
    """The caller's teams with their role, member and workflow counts; POST creates a team."""
    error, name = "", ""
    if request.method == "POST":
        name = request.POST.get("name", "")
        try:
            team = team_services.create_team(actor=request.user, name=name)
        except DesignerError as exc:
            error = error_message(exc)
        else:
            messages.success(request, f"Team “{team.name}” created. You are its owner.")
            return redirect("team-detail", team_id=team.pk)
    teams = team_selectors.teams_for(user=request.user).annotate(
        member_count=Count("memberships", distinct=True), workflow_count=Count("workflows", distinct=True)
    )
    invitations = team_selectors.invitations_for(user=request.user)
    return TemplateResponse(
        request, "teams/list.html", {"teams": teams, "error": error, "name": name, "invitations": invitations},
        status=400 if error else 200,
    )


def _team_context(request: HtmxHttpRequest, team: Team, **extra: Any) -> dict[str, Any]:
    role = getattr(team, "role", None)
    members = list(team_selectors.members_of(team))
    owners = sum(1 for m in members if m.role == Membership.Role.OWNER)
    return {
        "team": team,
        "role": role,
        "is_owner": has_role(role, "owner"),
        "can_edit": has_role(role, "editor"),
        "members": members,
        "owner_count": owners,
        "role_choices": ROLE_CHOICES,
        "role_actions": ACTIONS,
        "workflows": team_selectors.team_workflows(user=request.user, team=team),
        "run_count": Run.objects.for_user(request.user).filter(team=team).count(),
        "invite": {"user": "", "role": Membership.Role.EDITOR, "error": ""},
        "invitations": team_selectors.pending_invitations_of(team) if has_role(role, "owner") else [],
        "shared_with_team": team_selectors.shared_with(team),
        "member_error": "",
        **extra,
    }


@login_required
@designer_errors
def team_detail(request: HtmxHttpRequest, team_id: int) -> HttpResponse:
    team = team_selectors.get_team(user=request.user, team_id=team_id)
    return TemplateResponse(request, "teams/detail.html", _team_context(request, team))


def _members_response(request: HtmxHttpRequest, team_id: int, **extra: Any) -> HttpResponse:
    """After a member change: the members partial for htmx, else back to the page."""
    try:
        team = team_selectors.get_team(user=request.user, team_id=team_id)
    except ObjectNotFound:
        # The caller just left the team (or removed themselves): nothing to show here any more.
        if request.htmx:
            return HttpResponseClientRedirect(reverse("team-list"))
        return redirect("team-list")
    if request.htmx:
        # A refused change is 400 with the error in the swapped partial (base.html's htmx config swaps it).
        refused = bool(extra.get("member_error") or extra.get("invite", {}).get("error"))
        return TemplateResponse(request, "teams/detail.html#members", _team_context(request, team, **extra),
                                status=400 if refused else 200)
    if extra.get("member_error") or extra.get("invite", {}).get("error"):
        messages.error(request, extra.get("member_error") or extra["invite"]["error"])
    elif extra.get("notice"):
        messages.success(request, extra["notice"])
    return redirect("team-detail", team_id=team.pk)


@signed_in("POST")
def member_invite(request: HtmxHttpRequest, team_id: int) -> HttpResponse:
    """Invite by username or email. The notice is the same whether or not such an account exists."""
    team = team_selectors.get_team(user=request.user, team_id=team_id)
    user_ref, role = request.POST.get("user", ""), request.POST.get("role", "")
    try:
        sent = invitation_services.invite(actor=request.user, team=team, user=user_ref, role=role,
                                          site_url=request.build_absolute_uri("/"))
    except ActionForbidden:
        raise
    except DesignerError as exc:
        invite = {"user": user_ref, "role": role, "error": error_message(exc)}
        response = _members_response(request, team_id, invite=invite)
        if exc.status == 429:
            # The same limit as the API's, said the same way: the form shows why, the header when to retry.
            response.status_code = 429
            response["Retry-After"] = str(exc.details.get("retry_after", 60))
        return response
    invitation = sent.invitation
    return _members_response(
        request, team_id,
        notice=f"Invited {invitation.invitee} as {invitation.role}. They join once they accept; if the name or "
               "email belongs to an account, they see the invitation in Trellis, and an email address gets a link.",
    )


@signed_in("POST")
def invitation_revoke(request: HtmxHttpRequest, team_id: int, invitation_id: int) -> HttpResponse:
    team = team_selectors.get_team(user=request.user, team_id=team_id)
    try:
        revoked = invitation_services.revoke_invitation(actor=request.user, team=team, invitation_id=invitation_id)
    except ActionForbidden:
        raise
    except DesignerError as exc:
        return _members_response(request, team_id, member_error=error_message(exc))
    return _members_response(request, team_id, notice=f"Invitation for {revoked.invitee} revoked.")


@signed_in("POST")
def invitation_answer(request: HtmxHttpRequest, invitation_id: int, answer: str) -> HttpResponse:
    """Accept or decline an invitation shown in the app (on the team list)."""
    invitation = team_selectors.get_invitation_for(user=request.user, invitation_id=invitation_id)
    try:
        if answer == "accept":
            invitation_services.accept_invitation(actor=request.user, invitation=invitation)
        else:
            invitation_services.decline_invitation(actor=request.user, invitation=invitation)
    except DesignerError as exc:
        messages.error(request, error_message(exc))
        return redirect("team-list")
    if answer == "accept":
        messages.success(request, f"You joined {invitation.team.name} as {invitation.role}.")
        return redirect("team-detail", team_id=invitation.team_id)
    messages.success(request, f"You declined the invitation to {invitation.team.name}.")
    return redirect("team-list")


@require_http_methods(["GET", "POST"])
@designer_errors
def invitation_link(request: HtmxHttpRequest, token: str) -> HttpResponse:
    """The emailed link: answer it signed in, or, for an invitation sent to an email with no account behind
    it, create an account and join in one step."""
    invitation = team_selectors.invitation_by_token(token)
    signed_in = request.user.is_authenticated
    if signed_in and invitation.user_id not in (None, request.user.pk):
        raise ObjectNotFound("this invitation does not exist or is not for you")
    form = SignUpForm(initial={"email": invitation.email})
    if request.method == "POST":
        action = request.POST.get("action", "")
        try:
            if action == "signup" and not signed_in and invitation.user_id is None:
                form = SignUpForm(request.POST, initial={"email": invitation.email})
                if form.is_valid():
                    membership = invitation_services.sign_up_and_accept(
                        invitation=invitation, username=form.cleaned_data["username"],
                        password=form.cleaned_data["password1"],
                    )
                    auth_login(request, membership.user, backend="django.contrib.auth.backends.ModelBackend")
                    messages.success(request, f"Welcome, {membership.user.get_username()}: you joined "
                                              f"{invitation.team.name} as {membership.role}.")
                    return redirect("team-detail", team_id=invitation.team_id)
            elif action in ("accept", "decline") and signed_in:
                if action == "accept":
                    invitation_services.accept_invitation(actor=request.user, invitation=invitation)
                    messages.success(request, f"You joined {invitation.team.name} as {invitation.role}.")
                    return redirect("team-detail", team_id=invitation.team_id)
                invitation_services.decline_invitation(actor=request.user, invitation=invitation)
                messages.success(request, f"You declined the invitation to {invitation.team.name}.")
                return redirect("team-list")
            else:
                messages.error(request, "Sign in (or create your account below) to answer this invitation.")
        except DesignerError as exc:
            messages.error(request, error_message(exc))
        invitation.refresh_from_db()
    context = {"invitation": invitation, "form": form, "signed_in": signed_in,
               "can_sign_up": not signed_in and invitation.user_id is None}
    return TemplateResponse(request, "teams/invitation.html", context,
                            status=400 if request.method == "POST" else 200)


@signed_in("POST")
def member_update(request: HtmxHttpRequest, team_id: int, user_id: int) -> HttpResponse:
    team = team_selectors.get_team(user=request.user, team_id=team_id)
    try:
        membership = team_services.change_member_role(
            actor=request.user, team=team, user_id=user_id, role=request.POST.get("role", "")
        )
    except ActionForbidden:
        raise
    except DesignerError as exc:
        return _members_response(request, team_id, member_error=error_message(exc))
    return _members_response(
        request, team_id,
        notice=f"{membership.user.get_username()} is now {membership.get_role_display().lower()}.",
    )


@signed_in("POST")
def member_remove(request: HtmxHttpRequest, team_id: int, user_id: int) -> HttpResponse:
    team = team_selectors.get_team(user=request.user, team_id=team_id)
    try:
        team_services.remove_member(actor=request.user, team=team, user_id=user_id)
    except ActionForbidden:
        raise
    except DesignerError as exc:
        return _members_response(request, team_id, member_error=error_message(exc))
    return _members_response(request, team_id, notice="Member removed.")


