"""Team pages: list and create, members and roles (owner only), sharing and duplicating a workflow.

Uses the ``cast`` fixture (tests/designer/conftest.py): team Acme with owner olivia, editor eddie, viewer vera;
stan owns another team.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from designer.models import Invitation, Membership, Team, Workflow
from tests.designer.clients import client_for

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "members"}


def test_team_list_shows_only_my_teams_with_my_role(cast: Any) -> None:
    page = client_for(cast.viewer).get(reverse("team-list")).content.decode()
    assert "Acme" in page and "Other" not in page
    assert 'class="badge role-viewer"' in page


def test_creating_a_team_makes_me_its_owner_and_opens_it(make_user: Any) -> None:
    alice = make_user("alice")
    response = client_for(alice).post(reverse("team-list"), {"name": "Payments"})
    team = Team.objects.get(name="Payments")
    assert response.status_code == 302 and response["Location"] == reverse("team-detail", args=[team.pk])
    assert Membership.objects.get(team=team, user=alice).role == "owner"


def test_a_team_needs_a_name(make_user: Any) -> None:
    response = client_for(make_user("alice")).post(reverse("team-list"), {"name": "  "})
    assert response.status_code == 400
    assert "A team needs a name" in response.content.decode()
    assert not Team.objects.exists()


def test_stranger_gets_404_on_team_pages(cast: Any) -> None:
    stranger = client_for(cast.stranger)
    team = cast.team
    assert stranger.get(reverse("team-detail", args=[team.pk])).status_code == 404
    response = stranger.post(reverse("team-member-add", args=[team.pk]), {"user": "stan", "role": "owner"})
    assert response.status_code == 404
    assert not Membership.objects.filter(team=team, user=cast.stranger).exists()


def test_owner_sees_member_controls_viewer_does_not(cast: Any) -> None:
    url = reverse("team-detail", args=[cast.team.pk])
    owner_page = client_for(cast.owner).get(url).content.decode()
    viewer_page = client_for(cast.viewer).get(url).content.decode()
    assert ">Invite</button>" in owner_page and 'name="role"' in owner_page
    assert "Pending invitations" in owner_page and "Pending invitations" not in viewer_page
    assert ">Invite</button>" not in viewer_page and "Remove" not in viewer_page
    assert "Leave team" in viewer_page
    for name in ("olivia", "eddie", "vera"):
        assert f'data-member="{name}"' in viewer_page


def test_invite_by_email_returns_the_members_partial_with_the_pending_invitation(cast: Any, make_user: Any) -> None:
    bob = make_user("bob", email="Bob@Example.com")
    response = client_for(cast.owner).post(
        reverse("team-member-add", args=[cast.team.pk]), {"user": "bob@example.com", "role": "viewer"}, **HTMX
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<div id="members">'), "htmx gets only the members partial"
    assert 'data-invitation="bob@example.com"' in body and "Invited bob@example.com as viewer" in body
    assert 'data-member="bob"' not in body
    assert not Membership.objects.filter(team=cast.team, user=bob).exists()


def test_owner_revokes_an_invitation_from_the_page(cast: Any, make_user: Any) -> None:
    make_user("bob")
    client = client_for(cast.owner)
    client.post(reverse("team-member-add", args=[cast.team.pk]), {"user": "bob", "role": "viewer"}, **HTMX)
    invitation = Invitation.objects.get(invitee="bob")
    response = client.post(reverse("team-invitation-revoke", args=[cast.team.pk, invitation.pk]), **HTMX)
    body = response.content.decode()
    assert "Invitation for bob revoked." in body and 'data-invitation="bob"' not in body
    assert Invitation.objects.get(pk=invitation.pk).status == "revoked"
    assert client_for(cast.editor).post(
        reverse("team-invitation-revoke", args=[cast.team.pk, invitation.pk])).status_code == 403


def test_inviting_an_existing_member_shows_the_error_in_the_form(cast: Any) -> None:
    response = client_for(cast.owner).post(
        reverse("team-member-add", args=[cast.team.pk]), {"user": "vera", "role": "editor"}, **HTMX
    )
    body = response.content.decode()
    assert response.status_code == 400  # base.html's htmx config swaps a 400: the error is in the partial
    assert "already a member" in body and 'value="vera"' in body


def test_editor_cannot_invite(cast: Any, make_user: Any) -> None:
    make_user("bob")
    response = client_for(cast.editor).post(reverse("team-member-add", args=[cast.team.pk]),
                                            {"user": "bob", "role": "owner"})
    assert response.status_code == 403
    assert Membership.objects.filter(team=cast.team).count() == 3


def test_owner_changes_a_role(cast: Any) -> None:
    response = client_for(cast.owner).post(
        reverse("team-member-update", args=[cast.team.pk, cast.viewer.pk]), {"role": "editor"}, **HTMX
    )
    assert response.status_code == 200 and "vera is now editor" in response.content.decode()
    assert Membership.objects.get(team=cast.team, user=cast.viewer).role == "editor"


def test_the_last_owner_cannot_demote_themselves(cast: Any) -> None:
    response = client_for(cast.owner).post(
        reverse("team-member-update", args=[cast.team.pk, cast.owner.pk]), {"role": "viewer"}, **HTMX
    )
    assert "At least one owner".lower() in response.content.decode().lower()
    assert Membership.objects.get(team=cast.team, user=cast.owner).role == "owner"


def test_the_sole_owner_is_offered_no_leave_and_no_role_select_until_there_is_another_owner(cast: Any) -> None:
    client = client_for(cast.owner)
    url = reverse("team-detail", args=[cast.team.pk])

    def owner_row(page: str) -> str:
        return page.split('data-member="olivia"', 1)[1].split("</tr>", 1)[0]

    sole = owner_row(client.get(url).content.decode())
    assert 'aria-label="Role of olivia"' not in sole and ">Leave</button>" not in sole
    assert "The only owner: make someone else owner before you change your role or leave." in sole
    assert 'aria-label="Role of eddie"' in client.get(url).content.decode()
    assert '<p class="hint sole-owner" data-testid="sole-owner">The only owner.</p>' in owner_row(
        client_for(cast.viewer).get(url).content.decode())
    client.post(reverse("team-member-update", args=[cast.team.pk, cast.editor.pk]), {"role": "owner"}, **HTMX)
    shared = owner_row(client.get(url).content.decode())
    assert 'aria-label="Role of olivia"' in shared and ">Leave</button>" in shared and "only owner" not in shared


def test_without_htmx_a_member_change_redirects_back(cast: Any) -> None:
    response = client_for(cast.owner).post(reverse("team-member-remove", args=[cast.team.pk, cast.viewer.pk]))
    assert response.status_code == 302 and response["Location"] == reverse("team-detail", args=[cast.team.pk])
    assert not Membership.objects.filter(team=cast.team, user=cast.viewer).exists()


def test_viewer_can_leave_and_is_sent_to_the_team_list(cast: Any) -> None:
    response = client_for(cast.viewer).post(
        reverse("team-member-remove", args=[cast.team.pk, cast.viewer.pk]), **HTMX
    )
    assert response["HX-Redirect"] == reverse("team-list")
    assert not Membership.objects.filter(team=cast.team, user=cast.viewer).exists()


def test_viewer_cannot_remove_others(cast: Any) -> None:
    response = client_for(cast.viewer).post(reverse("team-member-remove", args=[cast.team.pk, cast.editor.pk]))
    assert response.status_code == 403
    assert Membership.objects.filter(team=cast.team, user=cast.editor).exists()


def test_sharing_page_shows_the_team_and_who_can_do_what(cast: Any, workflow: Any) -> None:
    page = client_for(cast.viewer).get(reverse("workflow-sharing", args=[workflow.pk])).content.decode()
    assert "Shared with" in page and "Acme" in page
    assert 'data-member="olivia"' in page
    assert "Only owners of Acme can copy" in page
    assert "Duplicating needs the editor role" in page  # the one rule, stated where it applies


def test_stranger_gets_404_on_sharing(cast: Any, workflow: Any) -> None:
    assert client_for(cast.stranger).get(reverse("workflow-sharing", args=[workflow.pk])).status_code == 404


def test_owner_duplicates_into_another_team_they_edit(cast: Any, workflow: Any) -> None:
    Membership.objects.create(team=cast.other_team, user=cast.owner, role="editor")
    client = client_for(cast.owner)
    page = client.get(reverse("workflow-sharing", args=[workflow.pk])).content.decode()
    assert f'<option value="{cast.other_team.pk}"' in page
    response = client.post(reverse("workflow-sharing", args=[workflow.pk]),
                           {"team": str(cast.other_team.pk), "name": "Simple copy"})
    copy = Workflow.objects.get(team=cast.other_team)
    assert response.status_code == 302 and response["Location"] == reverse("workflow-sharing", args=[copy.pk])
    assert copy.name == "Simple copy" and copy.document["nodes"] == workflow.document["nodes"]


def test_duplicating_into_a_team_where_i_am_only_viewer_is_refused(cast: Any, workflow: Any) -> None:
    Membership.objects.create(team=cast.other_team, user=cast.owner, role="viewer")
    client = client_for(cast.owner)
    assert f'<option value="{cast.other_team.pk}"' not in client.get(
        reverse("workflow-sharing", args=[workflow.pk])).content.decode()
    response = client.post(reverse("workflow-sharing", args=[workflow.pk]), {"team": str(cast.other_team.pk)})
    assert response.status_code == 403  # DUPLICATE_RULE, enforced by the service
    assert not Workflow.objects.filter(team=cast.other_team).exists()


def test_viewer_cannot_duplicate_from_the_list_page_either(cast: Any, workflow: Any) -> None:
    Membership.objects.create(team=cast.other_team, user=cast.viewer, role="owner")
    client = client_for(cast.viewer)
    for target in ("", str(cast.other_team.pk)):
        response = client.post(reverse("workflow-duplicate", args=[workflow.pk]), {"team": target}, follow=True)
        assert "Could not duplicate" in response.content.decode()
    assert Workflow.objects.count() == 1


def test_editor_cannot_duplicate_into_another_team(cast: Any, workflow: Any) -> None:
    Membership.objects.create(team=cast.other_team, user=cast.editor, role="owner")
    response = client_for(cast.editor).post(reverse("workflow-sharing", args=[workflow.pk]),
                                            {"team": str(cast.other_team.pk)})
    assert response.status_code == 403
    assert not Workflow.objects.filter(team=cast.other_team).exists()
