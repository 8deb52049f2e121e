"""Machines get JSON: every answer on /api/ and /hooks/ paths is ``{code, message}`` JSON, including the ones
Django gives before any view runs (no route, a body over the size limit, a wrong method); and every refusal is
logged as one line saying who, what and why, never a traceback."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from designer.models import Run
from designer.runs import services as run_services
from designer.triggers import services as triggers
from designer.workflows import services as workflow_services
from tests.designer.clients import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def secret(cast: Any, workflow: Any) -> str:
    workflow_services.publish_workflow(actor=cast.editor, workflow=workflow, note="first")
    return triggers.create_webhook(actor=cast.editor, workflow=workflow, name="shop").secret


def _json_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json"), response.content[:300]
    body: dict[str, Any] = response.json()
    assert body["code"] == code and body["message"], body
    return body


def test_a_webhook_body_over_the_limit_is_a_json_413_and_starts_nothing(client: Client, secret: str) -> None:
    limit = int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    body = json.dumps({"amount": 1, "padding": "x" * limit})
    response = client.post(reverse("webhook-call", args=[secret]), data=body, content_type="application/json")
    assert str(limit) in _json_error(response, 413, "request.too_large")["message"]
    assert Run.objects.count() == 0


def test_a_webhook_called_with_another_method_is_a_json_405(client: Client, secret: str) -> None:
    response = client.get(reverse("webhook-call", args=[secret]))
    _json_error(response, 405, "method.not_allowed")
    assert response["Allow"] == "POST"


@pytest.mark.parametrize("path", ["/hooks/", "/hooks/a/b/", "/hooks", "/hooks/x%0Ay/z/"])
def test_a_hook_path_that_names_nothing_is_a_json_404(client: Client, path: str) -> None:
    _json_error(client.post(path, data="{}", content_type="application/json"), 404, "not_found")


@pytest.mark.parametrize("path", ["/api/work%0Aflows/", "/api/workflows/%0A/", "/api/%0A"])
def test_an_api_path_with_a_newline_is_a_json_404(cast: Any, path: str) -> None:
    for client in (Client(), client_for(cast.owner)):
        _json_error(client.get(path), 404, "not_found")


def test_a_refused_page_action_logs_one_line_without_a_traceback(cast: Any, workflow: Any,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    run = run_services.start_run(actor=cast.owner, workflow=workflow, input={"amount": 1})
    with caplog.at_level(logging.INFO):
        viewer = client_for(cast.viewer).post(reverse("run-cancel", args=[run.pk]))
        stranger = client_for(cast.stranger).post(reverse("run-cancel", args=[run.pk]))
        conflict = client_for(cast.owner).post(reverse("run-redrive", args=[run.pk]))
    assert (viewer.status_code, stranger.status_code, conflict.status_code) == (403, 404, 409)
    assert "is queued" in conflict.content.decode()  # the page says why
    lines = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert [record.exc_info for record in lines] == [None, None, None]
    messages = [record.getMessage() for record in lines]
    assert len(messages) == 3 and all("\n" not in message for message in messages), messages
    assert messages[0].startswith(f"refused 403 POST /runs/{run.pk}/cancel/ for vera (user {cast.viewer.pk}): "
                                  "permission.denied: ")
    assert messages[1].startswith(f"refused 404 POST /runs/{run.pk}/cancel/ for stan")
    assert messages[2].startswith(f"refused 409 POST /runs/{run.pk}/redrive/ for olivia") and "is queued" in messages[2]


def test_a_refused_api_call_logs_one_line_without_a_traceback(cast: Any, workflow: Any, api: Any,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    run = run_services.start_run(actor=cast.owner, workflow=workflow, input={"amount": 1})
    with caplog.at_level(logging.INFO):
        assert api(cast.viewer).post(reverse("api:run-cancel", args=[run.pk])).status_code == 403
        assert api(cast.owner).post(reverse("api:run-redrive", args=[run.pk])).status_code == 409
        assert api(None).get(reverse("api:run-detail", args=[run.pk])).status_code == 401
    lines = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert [record.exc_info for record in lines] == [None, None, None]
    messages = [record.getMessage() for record in lines]
    assert messages[0].startswith(f"refused 403 POST /api/runs/{run.pk}/cancel/ for vera"), messages
    assert messages[1].startswith(f"refused 409 POST /api/runs/{run.pk}/redrive/ for olivia")
    assert "queued" in messages[1]
    assert messages[2].startswith(f"refused 401 GET /api/runs/{run.pk}/ for anonymous: auth.required: ")
