from __future__ import annotations

import pytest
from django.urls import reverse

from designer.models import Membership

pytestmark = pytest.mark.django_db


def test_list_teams_with_the_callers_role(cast, api):
    body = api(cast.editor).get(reverse("api:team-list")).json()
    assert body == [{"id": cast.team.pk, "name": "Acme", "slug": "acme", "role": "editor"}]


def test_create_team_makes_the_caller_owner(cast, api):
    response = api(cast.viewer).post(reverse("api:team-list"), {"name": "Vera's lab"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["role"] == "owner" and body["slug"] == "veras-lab"
    assert body["members"] == [{"user_id": cast.viewer.pk, "username": "vera", "email": "vera@example.com",
                                "role": "owner"}]


def test_team_detail_lists_members(cast, api):
    body = api(cast.viewer).get(reverse("api:team-detail", args=[cast.team.pk])).json()
    assert [(m["username"], m["role"]) for m in body["members"]] == [
        ("eddie", "editor"), ("olivia", "owner"), ("vera", "viewer")]


def test_owner_invites_then_changes_and_removes_members(cast, api, make_user):
    zoe = make_user("zoe", email="zoe@example.com")
    client = api(cast.owner)
    invited = client.post(reverse("api:team-invitations", args=[cast.team.pk]),
                          {"user": "zoe@example.com", "role": "editor"}, format="json")
    assert invited.status_code == 201 and invited.json()["role"] == "editor"
    assert not Membership.objects.filter(team=cast.team, user=zoe).exists()
    api(zoe).post(reverse("api:invitation-accept", args=[invited.json()["id"]]))
    members = client.get(reverse("api:team-members", args=[cast.team.pk])).json()
    assert ("zoe", "editor") in [(m["username"], m["role"]) for m in members]
    member = reverse("api:team-member", args=[cast.team.pk, zoe.pk])
    assert client.patch(member, {"role": "owner"}, format="json").json()["role"] == "owner"
    assert client.delete(member).status_code == 204
    assert not Membership.objects.filter(team=cast.team, user=zoe).exists()


def test_member_errors_are_json_with_stable_codes(cast, api):
    client = api(cast.owner)
    invitations = reverse("api:team-invitations", args=[cast.team.pk])
    member_already = client.post(invitations, {"user": "vera", "role": "viewer"}, format="json")
    assert (member_already.status_code, member_already.json()["code"]) == (400, "request.invalid")
    bad_role = client.post(invitations, {"user": "stan", "role": "admin"}, format="json")
    assert (bad_role.status_code, bad_role.json()["code"]) == (400, "request.invalid")
    last_owner = client.patch(reverse("api:team-member", args=[cast.team.pk, cast.owner.pk]), {"role": "viewer"},
                              format="json")
    assert (last_owner.status_code, last_owner.json()["code"]) == (400, "team.rule")
    not_member = client.delete(reverse("api:team-member", args=[cast.team.pk, cast.stranger.pk]))
    assert (not_member.status_code, not_member.json()["code"]) == (404, "not_found")


def test_members_cannot_be_added_directly(cast, api):
    """The old direct add (POST members/ {"user": ...}) no longer exists: only an invitation can bring someone in."""
    response = api(cast.owner).post(reverse("api:team-members", args=[cast.team.pk]), {"user": "stan",
                                                                                         "role": "owner"},
                                    format="json")
    assert (response.status_code, response.json()["code"]) == (405, "method.not_allowed")
    assert not Membership.objects.filter(team=cast.team, user=cast.stranger).exists()


def test_a_viewer_may_leave(cast, api):
    response = api(cast.viewer).delete(reverse("api:team-member", args=[cast.team.pk, cast.viewer.pk]))
    assert response.status_code == 204
    assert api(cast.viewer).get(reverse("api:team-detail", args=[cast.team.pk])).status_code == 404
