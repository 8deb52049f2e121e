"""Invitation limits: one sender's invitations an hour and one recipient's a day, refused with 429, Retry-After
and a message saying which limit and when to try again, from the API and from the team page alike. Before
them, an owner sent 30 invitation emails to one address in 1.8 s.

Uses the ``cast`` fixture: team Acme with owner olivia; stan owns Other.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse

from designer.models import Invitation

pytestmark = pytest.mark.django_db


def invite(api: Any, owner: Any, team: Any, who: str) -> Any:
    return api(owner).post(reverse("api:team-invitations", args=[team.pk]), {"user": who, "role": "viewer"},
                           format="json")


def test_one_address_gets_three_invitations_a_day_from_anyone(cast: Any, api: Any, settings: Any) -> None:
    for _ in range(3):
        assert invite(api, cast.owner, cast.team, "flood@example.com").status_code == 201
    refused = invite(api, cast.owner, cast.team, "Flood@Example.com")
    assert refused.status_code == 429
    body = refused.json()
    assert body["code"] == "invitation.rate_limited" and body["field"] == "user"
    assert "Flood@Example.com has been invited 3 times in the last day" in body["message"]
    assert 0 < int(refused["Retry-After"]) <= 24 * 3600
    assert len(mail.outbox) == 3
    # Another owner, another team: the recipient's limit is the recipient's, whoever sends.
    other_owner = cast.stranger
    assert invite(api, other_owner, cast.other_team, "flood@example.com").status_code == 429
    assert Invitation.objects.filter(invitee__iexact="flood@example.com").count() == 3
    # Other people can still be invited.
    assert invite(api, cast.owner, cast.team, "someone-else@example.com").status_code == 201


def test_one_sender_has_an_hourly_limit_over_all_their_teams(cast: Any, api: Any, settings: Any) -> None:
    settings.TRELLIS_INVITATIONS_PER_INVITER = 4
    for index in range(4):
        assert invite(api, cast.owner, cast.team, f"person{index}@example.com").status_code == 201
    refused = invite(api, cast.owner, cast.team, "person9@example.com")
    assert refused.status_code == 429
    assert "you have sent 4 invitations in the last hour" in refused.json()["message"]
    assert 0 < int(refused["Retry-After"]) <= 3600
    # The limit is the sender's: another owner is not held back by it.
    assert invite(api, cast.stranger, cast.other_team, "person9@example.com").status_code == 201


def test_the_team_page_says_why_in_the_form_with_the_same_status(cast: Any, settings: Any) -> None:
    settings.TRELLIS_INVITATIONS_PER_INVITER = 1
    page = Client()
    page.force_login(cast.owner)
    url = reverse("team-member-add", args=[cast.team.pk])
    assert page.post(url, {"user": "one@example.com", "role": "viewer"}, HTTP_HX_REQUEST="true").status_code == 200
    refused = page.post(url, {"user": "two@example.com", "role": "viewer"}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    html = refused.content.decode()
    assert "You have sent 1 invitation in the last hour, the most allowed; try again in 60 minutes" in html
    assert 'value="two@example.com"' in html  # what was typed is kept


@pytest.mark.django_db(transaction=True)
def test_parallel_invitations_to_one_address_never_pass_the_limit(make_user: Any) -> None:
    from designer.access import invitations, teams
    from designer.core.errors import InvitationsLimited

    owner = make_user("parallel-owner")
    team = teams.create_team(actor=owner, name="Parallel")
    barrier = threading.Barrier(10)

    def one(_index: int) -> str:
        from django.db import connection

        try:
            barrier.wait(timeout=30)
            invitations.invite(actor=owner, team=team, user="target@example.com", role="viewer",
                               site_url="http://testserver/")
            return "sent"
        except InvitationsLimited:
            return "refused"
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=10) as pool:
        outcomes = sorted(pool.map(one, range(10)))
    assert outcomes == ["refused"] * 7 + ["sent"] * 3
    assert Invitation.objects.filter(invitee="target@example.com").count() == 3
