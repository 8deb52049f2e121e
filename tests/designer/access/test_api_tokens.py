"""Personal access tokens: created on the settings page and shown once, stored hashed, sent as a Bearer header;
expired and revoked tokens refused, read-only tokens refused on writes, team-limited tokens see one team only.

Uses the ``cast`` fixture: team Acme with owner olivia, editor eddie, viewer vera; stan owns Other.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from designer.access import tokens as token_services
from designer.models import ApiToken, Membership, Team, Workflow

pytestmark = pytest.mark.django_db


def bearer(secret: str) -> APIClient:
    """A client with no session and no CSRF token: only the Authorization header."""
    client = APIClient(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def make(user: Any, **options: Any) -> str:
    return token_services.create_token(actor=user, name=options.pop("name", "ci"), **options).secret


def test_settings_page_creates_a_token_shown_once_and_stored_hashed(cast: Any) -> None:
    client = Client()
    client.force_login(cast.owner)
    response = client.post(reverse("api-tokens"), {"name": "nightly CI", "days": "30", "team": "", "read_only": ""})
    assert response.status_code == 201 and response["Cache-Control"] == "no-store"
    secret = re.search(r'<code id="token-secret">(trl_[\w-]+)</code>', response.content.decode()).group(1)
    token = ApiToken.objects.get(user=cast.owner)
    assert token.name == "nightly CI" and token.token_hash != secret and secret not in token.token_hash
    assert (token.expires_at - timezone.now()).days in (29, 30)
    listing = client.get(reverse("api-tokens")).content.decode()
    assert secret not in listing and token.prefix in listing and "never" in listing  # never used yet
    assert bearer(secret).get(reverse("api:team-list")).status_code == 200


def test_a_valid_token_reads_and_writes_without_session_or_csrf(cast: Any, workflow: Any) -> None:
    client = bearer(make(cast.editor))
    assert [w["id"] for w in client.get(reverse("api:workflow-list")).json()] == [workflow.pk]
    created = client.post(reverse("api:workflow-list"), {"team": cast.team.pk, "name": "By script"}, format="json")
    assert created.status_code == 201 and created.json()["created_by"] == "eddie"
    token = ApiToken.objects.get(user=cast.editor)
    assert token.last_used_at is not None


@pytest.mark.parametrize("problem", ["expired", "revoked", "unknown", "malformed"])
def test_expired_revoked_and_unknown_tokens_are_refused(cast: Any, problem: str) -> None:
    secret = make(cast.owner)
    token = ApiToken.objects.get(user=cast.owner)
    if problem == "expired":
        ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    elif problem == "revoked":
        token_services.revoke_token(actor=cast.owner, token_id=token.pk)
    elif problem == "unknown":
        secret = secret[:-4] + "AAAA"
    else:
        secret = secret + " extra"
    response = bearer(secret).get(reverse("api:team-list"))
    assert response.status_code in (401, 403)
    assert response.json()["code"] == "auth.failed"


def test_revoking_from_the_settings_page(cast: Any) -> None:
    secret = make(cast.owner, name="old")
    token = ApiToken.objects.get(user=cast.owner)
    client = Client()
    client.force_login(cast.owner)
    assert bearer(secret).get(reverse("api:team-list")).status_code == 200
    response = client.post(reverse("api-token-revoke", args=[token.pk]))
    assert response.status_code == 302
    assert bearer(secret).get(reverse("api:team-list")).json()["code"] == "auth.failed"
    # Someone else's token cannot be revoked (it looks absent).
    other = Client()
    other.force_login(cast.viewer)
    assert other.post(reverse("api-token-revoke", args=[token.pk])).status_code == 404


def test_a_read_only_token_reads_and_validates_but_cannot_write(cast: Any, workflow: Any) -> None:
    client = bearer(make(cast.owner, read_only=True))
    assert client.get(reverse("api:workflow-detail", args=[workflow.pk])).status_code == 200
    assert client.post(reverse("api:workflow-validate", args=[workflow.pk]), {}, format="json").status_code == 200
    writes = [
        client.patch(reverse("api:workflow-detail", args=[workflow.pk]), {"name": "x"}, format="json"),
        client.post(reverse("api:workflow-list"), {"team": cast.team.pk, "name": "x"}, format="json"),
        client.post(reverse("api:workflow-publish", args=[workflow.pk]), {}, format="json"),
        client.post(reverse("api:workflow-runs", args=[workflow.pk]), {"input": {"amount": 1}, "version": "draft"},
                    format="json"),
        client.delete(reverse("api:workflow-detail", args=[workflow.pk])),
        client.post(reverse("api:team-list"), {"name": "New"}, format="json"),
    ]
    assert [(r.status_code, r.json()["code"]) for r in writes] == [(403, "token.read_only")] * len(writes)
    assert Workflow.objects.get(pk=workflow.pk).name == "Simple flow" and Team.objects.count() == 2


def test_a_team_limited_token_gets_404_outside_its_team(cast: Any, workflow: Any) -> None:
    Membership.objects.create(team=cast.other_team, user=cast.owner, role="owner")
    elsewhere = Workflow.objects.create(team=cast.other_team, slug="theirs", name="Theirs", document={})
    client = bearer(make(cast.owner, team=cast.team.pk))
    assert [t["id"] for t in client.get(reverse("api:team-list")).json()] == [cast.team.pk]
    assert [w["id"] for w in client.get(reverse("api:workflow-list")).json()] == [workflow.pk]
    outside = [
        client.get(reverse("api:team-detail", args=[cast.other_team.pk])),
        client.get(reverse("api:workflow-detail", args=[elsewhere.pk])),
        client.patch(reverse("api:workflow-detail", args=[elsewhere.pk]), {"name": "x"}, format="json"),
        client.post(reverse("api:workflow-list"), {"team": cast.other_team.pk, "name": "x"}, format="json"),
        client.post(reverse("api:workflow-duplicate", args=[workflow.pk]), {"team": cast.other_team.pk},
                    format="json"),
    ]
    assert [(r.status_code, r.json()["code"]) for r in outside] == [(404, "not_found")] * len(outside)
    assert client.get(reverse("api:workflow-detail", args=[workflow.pk])).status_code == 200
    refused = client.post(reverse("api:team-list"), {"name": "Escape"}, format="json")
    assert refused.status_code == 403 and not Team.objects.filter(name="Escape").exists()


def test_a_token_cannot_reach_teams_its_user_left(cast: Any, workflow: Any) -> None:
    client = bearer(make(cast.viewer))
    assert client.get(reverse("api:workflow-detail", args=[workflow.pk])).status_code == 200
    Membership.objects.filter(team=cast.team, user=cast.viewer).delete()
    assert client.get(reverse("api:workflow-detail", args=[workflow.pk])).status_code == 404


def test_token_creation_checks_its_fields(cast: Any) -> None:
    client = Client()
    client.force_login(cast.viewer)
    for data, message in (
        ({"name": "", "days": "30"}, "Give the token a name"),
        ({"name": "x", "days": "3"}, "token lives 7, 30, 90, 365 days"),
        ({"name": "x", "days": "30", "team": str(cast.other_team.pk)}, "does not exist or is not shared with you"),
    ):
        response = client.post(reverse("api-tokens"), data)
        assert response.status_code == 400 and message in response.content.decode()
    assert not ApiToken.objects.exists()


def test_the_schema_declares_session_and_bearer_authentication(api: Any, cast: Any) -> None:
    schema = api(cast.owner).get(reverse("api-schema"), HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    schemes = schema["components"]["securitySchemes"]
    assert schemes["bearerAuth"]["type"] == "http" and schemes["bearerAuth"]["scheme"] == "bearer"
    assert schemes["cookieAuth"]["type"] == "apiKey"
    security = schema["paths"]["/api/workflows/"]["get"]["security"]
    assert {"bearerAuth": []} in security and {"cookieAuth": []} in security
