"""A timeout above the server's step cap (``TRELLIS_STEP_TIMEOUT_SECONDS``) is never accepted silently: the
analyzer warns ``step.timeout_capped`` with the cap the designer passes in, the inspector shows it next to the
timeout field where it is typed, and the API's save and validate answers carry it."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from runtime import Workflow
from runtime.analysis import step_timeout_diagnostics
from tests.designer.clients import client_for

pytestmark = pytest.mark.django_db


def _doc(node_timeout: float | None = None, workflow_timeout: float | None = None) -> dict[str, Any]:
    node: dict[str, Any] = {"id": "work", "kind": "task", "task": "set_value",
                            "input": [{"target": "value", "value": 1}]}
    if node_timeout is not None:
        node["timeout_seconds"] = node_timeout
    doc: dict[str, Any] = {"id": "capped", "nodes": [node]}
    if workflow_timeout is not None:
        doc["step_timeout_seconds"] = workflow_timeout
    return doc


def test_the_runtime_warns_for_each_timeout_over_the_cap() -> None:
    found = step_timeout_diagnostics(Workflow.model_validate(_doc(600, 90)), 60)
    assert [(d.code, d.severity, d.node_id, d.field) for d in found] == [
        ("step.timeout_capped", "warning", None, "step_timeout_seconds"),
        ("step.timeout_capped", "warning", "work", "timeout_seconds")]
    assert "600 s" in found[1].message and "60 s" in found[1].message and "'work'" in found[1].message
    assert found[1].data == {"timeout_seconds": 600, "cap_seconds": 60}
    assert step_timeout_diagnostics(Workflow.model_validate(_doc(60, 60)), 60) == []  # at the cap is fine


def _capped(body: dict[str, Any]) -> list[tuple[str | None, str | None]]:
    return [(d["node_id"], d["field"]) for d in body["diagnostics"] if d["code"] == "step.timeout_capped"]


def test_the_api_save_and_validate_warn_with_the_servers_cap(cast: Any, api: Any, settings: Any) -> None:
    settings.TRELLIS_STEP_TIMEOUT_SECONDS = 60
    flow = cast.workflow("Capped", _doc())
    client = api(cast.editor)
    saved = client.put(reverse("api:workflow-document", args=[flow.pk]),
                       {"document": _doc(600), "revision": flow.revision}, format="json")
    assert saved.status_code == 200, saved.json()
    assert _capped(saved.json()) == [("work", "timeout_seconds")]
    (warning,) = [d for d in saved.json()["diagnostics"] if d["code"] == "step.timeout_capped"]
    assert warning["severity"] == "warning" and "60 s" in warning["message"]
    checked = client.post(reverse("api:workflow-validate", args=[flow.pk]), {"document": _doc(None, 600)},
                          format="json")
    assert _capped(checked.json()) == [(None, "step_timeout_seconds")]

    settings.TRELLIS_STEP_TIMEOUT_SECONDS = 0  # no cap: nothing to warn about
    checked = client.post(reverse("api:workflow-validate", args=[flow.pk]), {"document": _doc(600)},
                          format="json")
    assert _capped(checked.json()) == []


def test_the_inspector_shows_the_warning_next_to_the_timeout_field(cast: Any, settings: Any) -> None:
    settings.TRELLIS_STEP_TIMEOUT_SECONDS = 60
    flow = cast.workflow("Capped", _doc(600))
    html = client_for(cast.editor).get(f"/workflows/{flow.pk}/edit/inspector/?node=work").content.decode()
    field = html.index('name="timeout_seconds"')
    warning = html.index('data-code="step.timeout_capped"')
    assert field < warning
    assert 'aria-describedby="limit-diagnostics"' in html[html.rindex("<input", 0, field):warning]
    assert "its timeout is 600 s, but this server stops every step after 60 s" in html

    fine = cast.workflow("Fine", _doc(30))
    html = client_for(cast.editor).get(f"/workflows/{fine.pk}/edit/inspector/?node=work").content.decode()
    assert "step.timeout_capped" not in html
