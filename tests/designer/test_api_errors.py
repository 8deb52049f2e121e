"""The API's error contract: JSON {code, message, ...}, CSRF enforced, no tracebacks."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from designer.core.api_errors import render_error

pytestmark = pytest.mark.django_db


def test_session_writes_need_the_csrf_token(cast, password):
    client = Client(enforce_csrf_checks=True)
    assert client.login(username="eddie", password=password)
    url = reverse("api:workflow-list")
    refused = client.post(url, {"team": cast.team.pk, "name": "No token"}, content_type="application/json")
    assert refused.status_code == 403
    assert refused.json()["code"] == "csrf.failed"

    client.get(reverse("home"))  # the page sets the csrftoken cookie, as in the browser
    token = client.cookies["csrftoken"].value
    accepted = client.post(url, {"team": cast.team.pk, "name": "With token"}, content_type="application/json",
                           headers={"X-CSRFToken": token})
    assert accepted.status_code == 201, accepted.content
    # Reads need no token.
    assert client.get(url).status_code == 200


def test_anonymous_gets_json_401_with_the_token_challenge(client):
    response = client.get(reverse("api:workflow-list"))
    assert response.status_code == 401 and response["WWW-Authenticate"] == 'Bearer realm="api"'
    assert response.json()["code"] == "auth.required"


@pytest.mark.parametrize("header", ["Bearer trl_not-a-token", "Bearer", "Bearer a b"])
def test_a_bad_token_gets_json_401_with_the_token_challenge(client, header):
    response = client.get(reverse("api:workflow-list"), HTTP_AUTHORIZATION=header)
    assert response.status_code == 401 and response["WWW-Authenticate"] == 'Bearer realm="api"'
    assert response.json()["code"] == "auth.failed" and response.json()["message"]


def test_wrong_method_is_json_405(cast, api):
    response = api(cast.owner).delete(reverse("api:task-list"))
    assert response.status_code == 405 and response.json()["code"] == "method.not_allowed"


def test_unexpected_errors_become_a_generic_json_500(cast, api, monkeypatch):
    from designer.workflows import catalog

    def explode():
        raise RuntimeError("secret internals")

    monkeypatch.setattr(catalog, "registry", explode)
    client = api(cast.owner)
    client.raise_request_exception = False
    response = client.get(reverse("api:task-list"))
    assert response.status_code == 500
    assert response.json() == {"code": "server.error", "message": "an unexpected error occurred; it has been logged"}
    assert b"secret internals" not in response.content and b"Traceback" not in response.content


def test_runtime_errors_keep_their_code_and_details():
    from runtime.errors import SubgraphResolutionError

    status, body = render_error(SubgraphResolutionError("no such child", workflow="child", version=None))
    assert status == 400
    assert body == {"code": "subgraph.unresolved", "message": "no such child", "workflow": "child"}
