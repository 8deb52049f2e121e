"""Invitations: nobody joins a team without accepting; accept, decline, revoke and sign up through the emailed
link; the owner's answer never tells whether an account exists.

Uses the ``cast`` fixture: team Acme with owner olivia, editor eddie, viewer vera; stan owns Other.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.urls import reverse

from designer.models import Invitation, Membership

pytestmark = pytest.mark.django_db

LINK = re.compile(r"http://testserver(/invitations/[\w-]+/)")


def invite(api: Any, cast: Any, who: str, role: str = "editor") -> Any:
    return api(cast.owner).post(reverse("api:team-invitations", args=[cast.team.pk]), {"user": who, "role": role},
                                format="json")


def link_in(message: Any) -> str:
    match = LINK.search(message.body)
    assert match, message.body
    return match.group(1)


def test_inviting_an_account_creates_no_membership_until_it_accepts(cast: Any, api: Any, make_user: Any) -> None:
    zoe = make_user("zoe", email="zoe@example.com")
    response = invite(api, cast, "zoe")
    assert response.status_code == 201
    assert response.json()["status"] == "pending" and response.json()["invitee"] == "zoe"
    assert not Membership.objects.filter(team=cast.team, user=zoe).exists()
    # The team does not show up in zoe's teams before she accepts.
    assert api(zoe).get(reverse("api:team-list")).json() == []

    mine = api(zoe).get(reverse("api:invitation-list")).json()
    assert [(i["team_name"], i["role"], i["invited_by"]) for i in mine] == [("Acme", "editor", "olivia")]
    accepted = api(zoe).post(reverse("api:invitation-accept", args=[mine[0]["id"]]))
    assert accepted.status_code == 200 and accepted.json()["role"] == "editor"
    assert Membership.objects.get(team=cast.team, user=zoe).role == "editor"
    again = api(zoe).post(reverse("api:invitation-accept", args=[mine[0]["id"]]))
    assert (again.status_code, again.json()["code"]) == (409, "invitation.closed")
    assert api(zoe).get(reverse("api:invitation-list")).json() == []


def test_declining_leaves_no_membership(cast: Any, api: Any, make_user: Any) -> None:
    zoe = make_user("zoe")
    invitation_id = invite(api, cast, "zoe").json()["id"]
    declined = api(zoe).post(reverse("api:invitation-decline", args=[invitation_id]))
    assert declined.status_code == 200 and declined.json()["status"] == "declined"
    assert not Membership.objects.filter(team=cast.team, user=zoe).exists()
    assert api(zoe).post(reverse("api:invitation-accept", args=[invitation_id])).status_code == 409


def test_someone_else_cannot_answer_an_invitation(cast: Any, api: Any, make_user: Any) -> None:
    make_user("zoe")
    invitation_id = invite(api, cast, "zoe").json()["id"]
    for caller in (cast.stranger, cast.viewer, cast.owner):
        response = api(caller).post(reverse("api:invitation-accept", args=[invitation_id]))
        assert (response.status_code, response.json()["code"]) == (404, "not_found")
    assert not Membership.objects.filter(team=cast.team, user__username="zoe").exists()


def test_owner_lists_and_revokes_pending_invitations(cast: Any, api: Any, make_user: Any) -> None:
    zoe = make_user("zoe", email="zoe@example.com")
    invitation_id = invite(api, cast, "zoe").json()["id"]
    listing = reverse("api:team-invitations", args=[cast.team.pk])
    assert [i["invitee"] for i in api(cast.owner).get(listing).json()] == ["zoe"]
    assert api(cast.editor).get(listing).status_code == 403
    assert api(cast.stranger).get(listing).status_code == 404

    revoke = reverse("api:team-invitation", args=[cast.team.pk, invitation_id])
    assert api(cast.editor).delete(revoke).status_code == 403
    assert api(cast.owner).delete(revoke).status_code == 204
    assert api(cast.owner).get(listing).json() == []
    assert api(zoe).get(reverse("api:invitation-list")).json() == []
    refused = api(zoe).post(reverse("api:invitation-accept", args=[invitation_id]))
    assert (refused.status_code, refused.json()["code"]) == (409, "invitation.closed")
    # The emailed link stops working too.
    page = Client().get(link_in(mail.outbox[-1]))
    assert page.status_code == 200 and "no longer open (revoked)" in page.content.decode()


def test_the_answer_is_the_same_whether_or_not_the_account_exists(cast: Any, api: Any, make_user: Any) -> None:
    make_user("zoe", email="zoe@example.com")

    def shape(response: Any) -> tuple[int, list[str], str, str]:
        body = response.json()
        return response.status_code, sorted(body), body["status"], body["role"]

    for existing, unknown in (("zoe", "nobody-by-that-name"), ("zoe@example.com", "nobody@example.com")):
        known_answer, unknown_answer = invite(api, cast, existing), invite(api, cast, unknown)
        assert shape(known_answer) == shape(unknown_answer) == (
            201, ["created_at", "expires_at", "id", "invited_by", "invitee", "role", "status"], "pending", "editor")
        assert known_answer.json()["invitee"] == existing and unknown_answer.json()["invitee"] == unknown
        # Nothing in the answer names the account behind it.
        assert "zoe" not in str(unknown_answer.json()) and "username" not in known_answer.json()
    client = Client()
    client.force_login(cast.owner)
    for who in ("zoe", "ghost"):
        notice = client.post(reverse("team-member-add", args=[cast.team.pk]), {"user": who, "role": "viewer"},
                             HTTP_HX_REQUEST="true").content.decode()
        assert f"Invited {who} as viewer. They join once they accept" in notice


def test_invite_email_goes_to_the_account_and_the_link_accepts_when_signed_in(cast: Any, api: Any,
                                                                             make_user: Any) -> None:
    zoe = make_user("zoe", email="zoe@example.com")
    invite(api, cast, "zoe", role="viewer")
    assert [m.to for m in mail.outbox] == [["zoe@example.com"]]
    assert "olivia invited you to join the team Acme on Trellis as viewer" in mail.outbox[0].body
    link = link_in(mail.outbox[0])

    anonymous = Client().get(link).content.decode()
    assert "Log in</a> to accept or decline" in anonymous and "Create account" not in anonymous

    intruder = Client()
    intruder.force_login(cast.stranger)
    assert intruder.get(link).status_code == 404
    assert intruder.post(link, {"action": "accept"}).status_code == 404

    client = Client()
    client.force_login(zoe)
    response = client.post(link, {"action": "accept"})
    assert response.status_code == 302 and response["Location"] == reverse("team-detail", args=[cast.team.pk])
    assert Membership.objects.get(team=cast.team, user=zoe).role == "viewer"


def test_a_new_person_signs_up_through_the_link_and_joins(cast: Any, api: Any) -> None:
    invite(api, cast, "newcomer@example.com", role="editor")
    link = link_in(mail.outbox[0])
    # The raw message (what the development console prints) holds the link whole on one line: no
    # quoted-printable soft line break splits it.
    raw = mail.outbox[0].message().as_string()
    assert "Content-Transfer-Encoding: 7bit" in raw and f"{link}\n" in raw and "=\n" not in raw
    client = Client()
    page = client.get(link).content.decode()
    assert "Create account and join" in page and 'value="newcomer@example.com"' in page

    weak = client.post(link, {"action": "signup", "username": "newt", "password1": "123", "password2": "123"})
    assert weak.status_code == 400 and "too short" in weak.content.decode()
    assert not get_user_model().objects.filter(username="newt").exists()
    taken = client.post(link, {"action": "signup", "username": "vera", "password1": "a long passphrase 42",
                               "password2": "a long passphrase 42"})
    assert taken.status_code == 400 and "already exists" in taken.content.decode()

    joined = client.post(link, {"action": "signup", "username": "newt", "password1": "a long passphrase 42",
                                "password2": "a long passphrase 42"})
    assert joined.status_code == 302 and joined["Location"] == reverse("team-detail", args=[cast.team.pk])
    newt = get_user_model().objects.get(username="newt")
    assert newt.email == "newcomer@example.com" and newt.check_password("a long passphrase 42")
    assert Membership.objects.get(team=cast.team, user=newt).role == "editor"
    assert client.get(reverse("team-detail", args=[cast.team.pk])).status_code == 200  # signed in as newt
    # The link is spent: a second sign-up through it is refused.
    second = Client().post(link, {"action": "signup", "username": "newt2", "password1": "a long passphrase 42",
                                  "password2": "a long passphrase 42"})
    assert second.status_code == 400 and not get_user_model().objects.filter(username="newt2").exists()


def test_expired_invitations_cannot_be_accepted(cast: Any, api: Any, make_user: Any) -> None:
    zoe = make_user("zoe")
    invitation_id = invite(api, cast, "zoe").json()["id"]
    Invitation.objects.filter(pk=invitation_id).update(expires_at=Invitation.objects.get().created_at
                                                       - timedelta(seconds=1))
    assert api(zoe).get(reverse("api:invitation-list")).json() == []
    response = api(zoe).post(reverse("api:invitation-accept", args=[invitation_id]))
    assert (response.status_code, response.json()["code"]) == (409, "invitation.closed")
    assert "expired" in response.json()["message"]


def test_unknown_link_is_404_and_tokens_are_stored_hashed(cast: Any, api: Any) -> None:
    invite(api, cast, "newcomer@example.com")
    token = link_in(mail.outbox[0]).strip("/").rsplit("/", 1)[-1]
    assert not Invitation.objects.filter(token_hash__contains=token).exists()
    assert Client().get(reverse("invitation-link", args=["not-a-token"])).status_code == 404


def test_accepting_in_the_app_from_the_team_list(cast: Any, api: Any, make_user: Any) -> None:
    zoe = make_user("zoe")
    invite(api, cast, "zoe", role="viewer")
    client = Client()
    client.force_login(zoe)
    page = client.get(reverse("team-list")).content.decode()
    assert "Invitations for you" in page and 'data-invitation="acme"' in page
    invitation = Invitation.objects.get(user=zoe)
    response = client.post(reverse("invitation-accept", args=[invitation.pk]))
    assert response.status_code == 302 and response["Location"] == reverse("team-detail", args=[cast.team.pk])
    assert Membership.objects.get(team=cast.team, user=zoe).role == "viewer"
