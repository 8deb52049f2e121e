"""Live co-editing's server side: the operation feed, presence, rebased edits and publishing what was shown."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from designer.models import DraftOperation, EditorPresence, WorkflowVersion
from designer.workflows import services as workflow_services
from tests.designer.clients import client_for

pytestmark = pytest.mark.django_db

DOC: dict[str, Any] = {
    "id": "two",
    "nodes": [
        {"id": "a", "kind": "task", "task": "set_value", "input": [{"target": "value", "value": 1}]},
        {"id": "b", "kind": "task", "task": "set_value", "input": [{"target": "value", "value": 2}]},
    ],
    "routes": [{"source": "a", "label": "ok", "target": "b"}],
}


@pytest.fixture(autouse=True)
def no_wait(settings: Any) -> None:
    # The feed answers at once when nothing is new: these tests ask about what is already stored.
    settings.TRELLIS_LIVE_WAIT_SECONDS = 0


@pytest.fixture
def two(cast: Any) -> Any:
    return cast.workflow("Two", DOC)


def _send(client: Client, workflow: Any, ops: list[dict[str, Any]], revision: int, tab: str) -> Any:
    body = {"revision": revision, "ops": ops, "client": tab}
    return client.post(f"/workflows/{workflow.pk}/edit/change/", json.dumps(body), content_type="application/json")


def _feed(client: Client, workflow: Any, **params: Any) -> Any:
    return client.get(f"/workflows/{workflow.pk}/edit/live/", params)


def test_the_feed_gives_every_change_after_a_revision_in_server_order_with_its_tab(cast: Any, two: Any) -> None:
    owner, editor = client_for(cast.owner), client_for(cast.editor)
    moved = _send(owner, two, [{"op": "move_nodes", "positions": {"a": {"x": 1, "y": 2}}}], 1, "tab-o")
    assert moved.status_code == 200
    # Eddie still on revision 1: his relabel of b is rebased onto revision 2.
    answer = _send(editor, two, [{"op": "set_basics", "node": "b", "id": "b", "name": "Bee"}], 1, "tab-e")
    assert answer.status_code == 200 and answer.json()["revision"] == 3
    assert answer.json()["document"]["metadata"]["positions"]["a"] == {"x": 1, "y": 2}

    data = _feed(client_for(cast.viewer), two, after=1).json()
    assert data["revision"] == 3 and data["resync"] is False
    assert [(e["revision"], e["client"], e["by"], e["ops"]) for e in data["entries"]] == [
        (2, "tab-o", "olivia", ["move_nodes"]), (3, "tab-e", "eddie", ["set_basics"])]
    # Resuming from the last revision seen: only what came after, nothing twice.
    assert [e["revision"] for e in _feed(owner, two, after=2).json()["entries"]] == [3]
    assert _feed(owner, two, after=3).json()["entries"] == []
    # The log's rows carry the operations as applied and their undo.
    row = DraftOperation.objects.get(workflow=two, revision=3)
    assert row.actor == cast.editor and row.undo[0]["op"] == "put_nodes"


def test_a_stranger_gets_404_from_the_feed_and_presence_and_bad_cursors_are_400(cast: Any, two: Any) -> None:
    stranger = client_for(cast.stranger)
    assert _feed(stranger, two, after=0).status_code == 404
    response = stranger.post(f"/workflows/{two.pk}/edit/presence/", json.dumps({"client": "tab-s"}),
                             content_type="application/json")
    assert response.status_code == 404
    assert not EditorPresence.objects.exists()
    bad = _feed(client_for(cast.owner), two, after="two")
    assert bad.status_code == 400 and bad.json()["field"] == "after"


def test_a_log_that_does_not_reach_back_asks_the_tab_to_reload(cast: Any, two: Any) -> None:
    owner = client_for(cast.owner)
    for n in range(3):
        _send(owner, two, [{"op": "move_nodes", "positions": {"a": {"x": n, "y": 0}}}], 1 + n, "tab-o")
    DraftOperation.objects.filter(workflow=two, revision=2).delete()
    data = _feed(owner, two, after=1).json()
    assert data["resync"] is True and data["revision"] == 4


def test_presence_shows_each_tab_with_its_selection_and_a_leaving_tab_goes(cast: Any, two: Any) -> None:
    owner, editor = client_for(cast.owner), client_for(cast.editor)

    def announce(client: Client, body: dict[str, Any]) -> int:
        return client.post(f"/workflows/{two.pk}/edit/presence/", json.dumps(body),
                           content_type="application/json").status_code

    assert announce(owner, {"client": "tab-o", "node": "a"}) == 204
    assert announce(editor, {"client": "tab-e", "node": None}) == 204
    before = _feed(owner, two).json()
    assert [(p["client"], p["initials"], p["node"]) for p in before["presence"]] == [("tab-o", "OL", "a"),
                                                                                      ("tab-e", "ED", None)]
    assert announce(editor, {"client": "tab-e", "node": "b"}) == 204
    after = _feed(owner, two).json()
    assert after["presence_token"] != before["presence_token"]  # a waiting feed wakes on it
    assert [p["node"] for p in after["presence"]] == ["a", "b"]
    # Another person cannot take over a tab's row; the tab's own person can leave.
    assert announce(owner, {"client": "tab-e", "node": "a"}) == 204
    assert EditorPresence.objects.get(client="tab-e").node == "b"
    assert announce(editor, {"client": "tab-e", "leave": True}) == 204
    assert [p["client"] for p in _feed(owner, two).json()["presence"]] == ["tab-o"]
    assert announce(owner, {"node": "a"}) == 400
    # A tab that vanished without leaving is cleared once it is an hour old and someone else arrives.
    old = timezone.now() - timedelta(hours=2)
    EditorPresence.objects.create(workflow=two, user=cast.viewer, client="tab-gone", seen_at=old, changed_at=old)
    assert announce(editor, {"client": "tab-e2", "node": None}) == 204
    assert not EditorPresence.objects.filter(client="tab-gone").exists()


def test_a_panel_edit_on_a_field_changed_since_is_refused_with_apply_mine(cast: Any, two: Any) -> None:
    owner, editor = client_for(cast.owner), client_for(cast.editor)
    assert _send(owner, two, [{"op": "bind_literal", "node": "a", "field": "input.value", "value": 10}], 1,
                 "tab-o").status_code == 200
    response = editor.post(f"/workflows/{two.pk}/edit/change/", {
        "action": "literal", "node": "a", "field": "input.value", "value": "20", "revision": "1", "client": "tab-e",
    }, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    events = json.loads(response["HX-Trigger"])
    notice = events["trellis:notice"]
    assert notice["kind"] == "conflict"
    assert notice["message"].startswith("Olivia changed input.value of a first (revision 2)")
    assert notice["action"]["ops"] == [{"op": "bind_literal", "node": "a", "field": "input.value", "text": "20"}]
    two.refresh_from_db()
    assert two.revision == 2 and two.document["nodes"][0]["input"][0]["value"] == 10
    # "Apply mine": the same operations on the revision now shown apply.
    applied = _send(editor, two, notice["action"]["ops"], 2, "tab-e")
    assert applied.status_code == 200
    assert applied.json()["document"]["nodes"][0]["input"][0]["value"] == 20


def test_the_same_tab_never_conflicts_with_its_own_earlier_change(cast: Any, two: Any) -> None:
    owner = client_for(cast.owner)
    def move(x: int, tab: str) -> int:
        return _send(owner, two, [{"op": "move_nodes", "positions": {"a": {"x": x, "y": 1}}}], 1, tab).status_code

    assert move(1, "tab-o") == 200
    assert move(2, "tab-o") == 200  # its own earlier move is no conflict
    assert move(3, "tab-x") == 409  # another tab's is


def test_publishing_publishes_the_revision_that_was_shown(cast: Any, two: Any) -> None:
    owner, editor = client_for(cast.owner), client_for(cast.editor)
    assert _send(owner, two, [{"op": "set_basics", "node": "a", "id": "a", "name": "Shown"}], 1, "o").status_code == 200
    # Eddie saves after Olivia looked at revision 2; she publishes what she saw.
    assert _send(editor, two, [{"op": "remove_nodes", "ids": ["b"]}], 2, "e").status_code == 200
    response = owner.post(f"/workflows/{two.pk}/edit/publish/", {"revision": "2", "note": ""},
                          HTTP_HX_REQUEST="true")
    assert response.status_code == 204
    assert "(revision 2, as shown)" in json.loads(response["HX-Trigger"])["trellis:notice"]["message"]
    version = WorkflowVersion.objects.get(workflow=two)
    assert [n["id"] for n in version.document["nodes"]] == ["a", "b"]
    assert version.document["nodes"][0]["name"] == "Shown"
    # The others hear of it through the feed.
    assert _feed(editor, two, after=3).json()["version"] == {"number": 1, "by": "olivia", "user": cast.owner.pk}
    # A revision the log no longer reaches is refused, not guessed.
    DraftOperation.objects.filter(workflow=two).delete()
    with pytest.raises(Exception, match="no longer known"):
        workflow_services.publish_workflow(actor=cast.owner, workflow=two, revision=1)
