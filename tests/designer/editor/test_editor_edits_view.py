"""The editor's one write endpoint: operations in, revision checked, saved draft and its undo out."""

from __future__ import annotations

import json
import re
from html import unescape
from typing import Any

import pytest
from django.test import Client

from designer.workflows import analysis as doc_analysis
from tests.designer.clients import client_for

pytestmark = pytest.mark.django_db

LOOP: dict[str, Any] = {
    "id": "loop",
    "input_schema": {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}}},
    "nodes": [
        {"id": "each", "kind": "foreach", "over": "input.items"},
        {"id": "work", "kind": "task", "task": "set_value"},
    ],
    "routes": [
        {"source": "each", "label": "loop", "target": "work"},
        {"source": "work", "label": "ok", "target": "each"},
    ],
}


@pytest.fixture
def loop(cast: Any) -> Any:
    return cast.workflow("Loop", LOOP)


def _send(client: Client, workflow: Any, ops: list[dict[str, Any]], revision: int | None = None) -> Any:
    body = {"revision": workflow.revision if revision is None else revision, "ops": ops}
    return client.post(f"/workflows/{workflow.pk}/edit/change/", json.dumps(body), content_type="application/json")


def test_operations_are_saved_with_the_revision_and_answered_with_their_undo(cast: Any, loop: Any) -> None:
    response = _send(client_for(cast.editor), loop, [{"op": "move_nodes", "positions": {"work": {"x": 40, "y": 50}}}])
    assert response.status_code == 200
    data = response.json()
    assert data["revision"] == loop.revision + 1
    assert data["document"]["metadata"]["positions"] == {"work": {"x": 40, "y": 50}}
    assert data["undo"] == [{"op": "move_nodes", "positions": {"work": None}}]
    assert data["analysis"]["control_regions"]["work"] == ["each"]
    loop.refresh_from_db()
    assert loop.document["metadata"]["positions"] == {"work": {"x": 40, "y": 50}}


def test_a_node_dropped_into_a_loop_is_wired_with_the_analyzers_labels(cast: Any, loop: Any) -> None:
    data = _send(client_for(cast.editor), loop, [{"op": "add_node", "node": {"kind": "foreach", "over": "input.items"},
                                               "id_hint": "inner", "loop": "each"}]).json()
    routes = {(r["source"], r["label"]): r["target"] for r in data["document"]["routes"]}
    # A foreach ends its work with "done" (the analyzer's answer): offered back to the outer loop.
    assert routes[("work", "ok")] == "inner" and routes[("inner", "done")] == "each"
    assert data["select"] == "inner"
    assert data["analysis"]["control_regions"]["inner"] == ["each"]


def test_a_stale_revision_is_rebased_or_409_when_it_wants_what_was_changed_since(cast: Any, loop: Any) -> None:
    client = client_for(cast.editor)
    assert _send(client, loop, [{"op": "set_start", "node": "each"}]).status_code == 200
    # The same field as the save it missed: refused, naming what was kept; nothing changes.
    response = _send(client, loop, [{"op": "set_start", "node": "work"}], revision=loop.revision)
    assert response.status_code == 409
    assert response.json()["code"] == "edit.conflict"
    assert response.json()["current_revision"] == loop.revision + 1
    assert response.json()["kept"][0]["what"] == "the workflow's start"
    loop.refresh_from_db()
    assert loop.document["start"] == "each" and loop.revision == 2
    # Something else: applied on top of the newer draft.
    response = _send(client, loop, [{"op": "remove_nodes", "ids": ["work"]}], revision=1)
    assert response.status_code == 200 and response.json()["revision"] == 3
    assert [n["id"] for n in response.json()["document"]["nodes"]] == ["each"]
    assert response.json()["document"]["start"] == "each"


def test_bad_operations_are_400_with_what_is_wrong_and_save_nothing(cast: Any, loop: Any) -> None:
    client = client_for(cast.editor)
    response = _send(client, loop, [{"op": "connect", "source": "each", "label": "done", "target": "ghost"}])
    assert response.status_code == 400
    assert "no node 'ghost'" in response.json()["message"]
    assert _send(client, loop, []).json()["message"] == "send a non-empty list of edit operations"
    bad = client.post(f"/workflows/{loop.pk}/edit/change/", "{not json", content_type="application/json")
    assert bad.status_code == 400 and "not valid JSON" in bad.json()["message"]
    loop.refresh_from_db()
    assert loop.revision == 1


def test_viewers_and_strangers_cannot_edit(cast: Any, loop: Any) -> None:
    assert _send(client_for(cast.viewer), loop, [{"op": "set_start", "node": "each"}]).status_code == 403
    assert _send(client_for(cast.stranger), loop, [{"op": "set_start", "node": "each"}]).status_code == 404
    loop.refresh_from_db()
    assert loop.revision == 1


def test_panel_forms_may_send_operations_and_get_the_undo_in_the_trigger(cast: Any, loop: Any) -> None:
    ops = [{"op": "connect", "source": "each", "label": "done", "target": "work"}]
    response = client_for(cast.editor).post(f"/workflows/{loop.pk}/edit/change/",
                                         {"revision": loop.revision, "ops": json.dumps(ops)}, HTTP_HX_REQUEST="true")
    changed = json.loads(response["HX-Trigger"])["trellis:document-changed"]
    assert changed["revision"] == 2
    assert changed["undo"] == [{"op": "disconnect", "source": "each", "label": "done"}]


def test_diagnostics_offer_a_one_click_fix_that_resolves_them(cast: Any, loop: Any) -> None:
    client = client_for(cast.editor)
    _send(client, loop, [{"op": "disconnect", "source": "work", "label": "ok"}])
    loop.refresh_from_db()
    html = client.get(f"/workflows/{loop.pk}/edit/diagnostics/").content.decode()
    assert 'data-code="region.no_return"' in html
    fix = [{"op": "connect", "source": "work", "label": "ok", "target": "each"}]
    offered = re.findall(r'data-fix-ops="([^"]+)"', html)
    assert [json.loads(unescape(text)) for text in offered] == [fix]
    assert "Route ok back to each" in html
    data = _send(client, loop, fix).json()
    assert not [d for d in data["diagnostics"] if d["severity"] == "error"]
    # A viewer sees the problem but no fix button.
    _send(client, loop, [{"op": "disconnect", "source": "work", "label": "ok"}], revision=loop.revision + 1)
    assert "data-fix-ops" not in client_for(cast.viewer).get(f"/workflows/{loop.pk}/edit/diagnostics/").content.decode()


def test_panels_after_a_save_reuse_that_revisions_analysis(cast: Any, loop: Any) -> None:
    client = client_for(cast.editor)
    _send(client, loop, [{"op": "set_start", "node": "each"}])
    before = doc_analysis.analysis_cache_counts()
    for url in ("edit/inspector/?node=work", "edit/diagnostics/", "edit/picker/?node=work&field=input.value"):
        assert client.get(f"/workflows/{loop.pk}/{url}").status_code == 200
    after = doc_analysis.analysis_cache_counts()
    assert after["misses"] == before["misses"]
    assert after["hits"] == before["hits"] + 3
    # A new revision is a new analysis.
    _send(client, loop, [{"op": "set_start", "node": "work"}], revision=loop.revision + 1)
    loop.refresh_from_db()
    assert doc_analysis.analysis_for(loop).workflow.start == "work"


def test_a_route_cycle_with_no_exit_is_fixed_in_one_click(cast: Any, loop: Any) -> None:
    client = client_for(cast.editor)
    data = _send(client, loop, [
        {"op": "add_node", "node": {"kind": "task", "task": "set_value"}, "id": "a"},
        {"op": "add_node", "node": {"kind": "task", "task": "set_value"}, "id": "b"},
        {"op": "connect", "source": "each", "label": "done", "target": "a"},
        {"op": "connect", "source": "a", "label": "ok", "target": "b"},
        {"op": "connect", "source": "b", "label": "ok", "target": "a"},
        {"op": "connect", "source": "a", "label": "error", "target": "b"},
        {"op": "connect", "source": "b", "label": "error", "target": "a"},
    ]).json()
    assert "route.no_exit" in {d["code"] for d in data["diagnostics"]}
    html = client.get(f"/workflows/{loop.pk}/edit/diagnostics/").content.decode()
    offered = [json.loads(unescape(text)) for text in re.findall(r'data-fix-ops="([^"]+)"', html)]
    assert offered == [[{"op": "disconnect", "source": "b", "label": "ok"}]]
    assert "End the cycle: unroute b · ok" in html
    fixed = _send(client, loop, offered[0], revision=data["revision"]).json()
    assert "route.no_exit" not in {d["code"] for d in fixed["diagnostics"]}
