"""The ``$defs`` bomb (issue 12): a schema whose expansion doubles per level is refused when it is saved,
and nothing the web server does with a run input ever validates against it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from designer.models import Run, WorkflowVersion
from tests.runtime.schema_support import bomb, spy_on_validation

pytestmark = pytest.mark.django_db


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    return spy_on_validation(monkeypatch)


def _bombed(document: dict[str, Any]) -> dict[str, Any]:
    edited = copy.deepcopy(document)
    schema = bomb(19)
    edited["input_schema"]["$defs"] = schema["$defs"]
    edited["input_schema"]["properties"]["amount"] = schema["properties"]["x"]
    return edited


def _save(api: Any, cast: Any, workflow: Any, document: dict[str, Any]) -> dict[str, Any]:
    response = api(cast.editor).put(reverse("api:workflow-document", args=[workflow.pk]),
                                    {"revision": workflow.revision, "document": _bombed(document)}, format="json")
    assert response.status_code == 200, response.json()
    body: dict[str, Any] = response.json()
    return body


def test_saving_reports_it_and_starting_the_draft_is_refused(api: Any, cast: Any, workflow: Any,
                                                            document: dict[str, Any], validations: list[Any],
                                                            enqueued: list[Any]) -> None:
    body = _save(api, cast, workflow, document)

    [problem] = [d for d in body["diagnostics"] if d["code"] == "schema.invalid"]
    assert (problem["severity"], problem["field"]) == ("error", "input_schema")
    assert "too complex: more than 10000 subschemas, the limit is 10000" in problem["message"]

    started = api(cast.editor).post(reverse("api:workflow-runs", args=[workflow.pk]),
                                    {"input": {"amount": 1}, "version": "draft"}, format="json")
    assert started.status_code == 400
    assert started.json()["code"] == "workflow.invalid"
    assert any("too complex" in d["message"] for d in started.json()["diagnostics"])

    checked = api(cast.editor).get(reverse("api:workflow-validate", args=[workflow.pk]))
    assert checked.status_code == 200 and checked.json()["ok"] is False
    assert not Run.objects.exists() and enqueued == []
    assert validations == []


def test_the_run_form_shows_the_refusal(api: Any, cast: Any, workflow: Any, document: dict[str, Any],
                                        validations: list[Any]) -> None:
    _save(api, cast, workflow, document)
    client = Client()
    client.force_login(cast.editor)

    response = client.post(reverse("run-start", args=[workflow.pk]), {"_mode": "json", "_json": '{"amount": 1}'},
                           HTTP_HX_REQUEST="true", HTTP_HX_TARGET="run-panel")

    assert "too complex" in response.content.decode()
    assert not Run.objects.exists()
    assert validations == []


def test_a_stored_version_holding_it_is_refused_before_any_validation(api: Any, cast: Any, workflow: Any,
                                                                      document: dict[str, Any],
                                                                      validations: list[Any]) -> None:
    # Publishing refuses such a draft; a version stored before the budget existed must not run either.
    version = WorkflowVersion.objects.create(workflow=workflow, number=1, document=_bombed(document))

    started = api(cast.editor).post(reverse("api:workflow-runs", args=[workflow.pk]),
                                    {"input": {"amount": 1}, "version": version.number}, format="json")

    assert started.status_code == 422  # input.invalid: the request fits the API, the workflow refuses it
    assert "too complex: more than 10000 subschemas" in str(started.json())
    assert not Run.objects.exists()
    assert validations == []
