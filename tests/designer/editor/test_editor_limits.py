"""The inspector's "Timeout and retries" form: a task node's timeout_seconds and retry policy are edited through the
one write path (checked against the runtime's own bounds, undoable like any panel edit)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from django.test import Client

from designer.core.errors import BadRequest
from designer.workflows import operations as ops
from runtime import Workflow
from tests.designer.clients import client_for

pytestmark = pytest.mark.django_db

DOC: dict[str, Any] = {
    "id": "limits",
    "step_timeout_seconds": 45,
    "nodes": [{"id": "work", "kind": "task", "task": "set_value",
               "input": [{"target": "value", "value": 1}]},
              {"id": "ask", "kind": "interrupt", "prompt": "ok?", "labels": ["ok"]}],
    "routes": [{"source": "work", "label": "ok", "target": "ask"}],
}


@pytest.fixture
def flow(cast: Any) -> Any:
    return cast.workflow("Limits", DOC)


def _save(client: Client, flow: Any, **fields: str) -> Any:
    flow.refresh_from_db()
    form = {"action": "limits", "node": "work", "revision": str(flow.revision), "timeout_seconds": "",
            "max_attempts": "", "backoff_seconds": "", "backoff_multiplier": "", "max_backoff_seconds": "", **fields}
    return client.post(f"/workflows/{flow.pk}/edit/change/", form, HTTP_HX_REQUEST="true")


def _node(flow: Any) -> dict[str, Any]:
    flow.refresh_from_db()
    node: dict[str, Any] = flow.document["nodes"][0]
    return node


def test_the_inspector_shows_the_limits_form_with_what_applies_when_empty(cast: Any, flow: Any) -> None:
    html = client_for(cast.viewer).get(f"/workflows/{flow.pk}/edit/inspector/?node=work").content.decode()
    assert 'name="action" value="limits"' in html and 'name="timeout_seconds"' in html
    assert "Empty: the workflow&#x27;s default, 45 s." in html
    assert "One attempt: a failure is not retried." in html
    assert "Save limits" not in html and "readonly" in html  # a viewer reads, never edits
    other = client_for(cast.viewer).get(f"/workflows/{flow.pk}/edit/inspector/?node=ask").content.decode()
    assert 'value="limits"' not in other  # only task nodes have them


def test_saving_sets_timeout_and_retry_and_undo_restores_the_node(cast: Any, flow: Any) -> None:
    client = client_for(cast.editor)
    before = copy.deepcopy(_node(flow))
    response = _save(client, flow, timeout_seconds="2.5", max_attempts="3", backoff_seconds="1")
    assert response.status_code == 200
    changed = json.loads(response["HX-Trigger"])["trellis:document-changed"]
    node = _node(flow)
    assert node["timeout_seconds"] == 2.5 and node["retry"] == {
        "max_attempts": 3, "backoff_seconds": 1.0, "backoff_multiplier": 2.0, "max_backoff_seconds": 60.0}
    Workflow.model_validate(flow.document)  # the runtime reads what was saved
    html = response.content.decode()
    assert 'value="2.5"' in html and "Up to 3 attempts; it waits 1 s, 2 s before the retries." in html

    undo = client.post(f"/workflows/{flow.pk}/edit/change/", json.dumps(
        {"revision": changed["revision"], "ops": changed["undo"]}), content_type="application/json")
    assert undo.status_code == 200
    assert _node(flow) == before


def test_emptying_the_fields_removes_the_nodes_own_limits(cast: Any, flow: Any) -> None:
    client = client_for(cast.editor)
    _save(client, flow, timeout_seconds="10", max_attempts="2")
    _save(client, flow)
    node = _node(flow)
    assert "timeout_seconds" not in node and node.get("retry") is None


@pytest.mark.parametrize(("fields", "message"), [
    ({"timeout_seconds": "0"}, "the timeout is a number of seconds above 0 and at most 86400, got '0'"),
    ({"timeout_seconds": "soon"}, "the timeout is a number of seconds above 0"),
    ({"timeout_seconds": "nan"}, "the timeout is a number of seconds above 0"),
    ({"timeout_seconds": "90000"}, "at most 86400"),
    ({"max_attempts": "2.5"}, "attempts is a whole number at least 1 and at most 100, got '2.5'"),
    ({"max_attempts": "0"}, "attempts is a whole number at least 1"),
    ({"max_attempts": "101"}, "at most 100"),
    ({"max_attempts": "3", "backoff_multiplier": "0.5"}, "the backoff multiplier is a number at least 1 and at most"),
    ({"max_attempts": "3", "backoff_seconds": "-1"}, "the first backoff is a number of seconds at least 0"),
])
def test_a_bad_value_is_named_and_nothing_is_saved(cast: Any, flow: Any, fields: dict[str, str],
                                                   message: str) -> None:
    revision, before = flow.revision, copy.deepcopy(_node(flow))
    response = _save(client_for(cast.editor), flow, **fields)
    html = response.content.decode()
    assert "inspector-error" in html and "node &#x27;work&#x27;: " in html and message.replace("'", "&#x27;") in html
    assert 'aria-invalid="true"' in html
    flow.refresh_from_db()
    assert flow.revision == revision and flow.document["nodes"][0] == before


def test_limits_are_only_for_task_nodes_and_the_operation_is_pure() -> None:
    doc = copy.deepcopy(DOC)
    with pytest.raises(BadRequest, match="only a task node has a timeout and retries"):
        ops.update_limits(doc, "ask", {"timeout_seconds": "3"})
    changed = ops.apply(doc, {"op": "set_limits", "node": "work", "timeout_seconds": 3, "max_attempts": 2})
    assert doc == DOC  # the input is never changed in place
    assert changed.document["nodes"][0]["timeout_seconds"] == 3.0
    assert ops.apply(changed.document, changed.undo[0]).document == DOC
    with pytest.raises(BadRequest):
        ops.apply(doc, {"op": "set_limits", "node": "work", "max_attempts": True})
