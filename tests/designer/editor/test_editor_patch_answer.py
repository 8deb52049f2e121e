"""The save's small answer (issue 34): with ``"answer": "patch"`` the editor's write endpoint answers with a JSON
Patch from the client's revision to the saved one, and the analysis only when it changed; a big schema builder
opens on demand in the workflow settings."""

from __future__ import annotations

import copy
import html
import json
import re
from typing import Any

import pytest
from django.test import Client

from designer.editor import panels
from designer.editor.context import BUILDER_INLINE_FIELDS, SELECT_INLINE_OPTIONS
from designer.models import DraftOperation, Workflow
from designer.workflows import analysis as doc_analysis
from designer.workflows import services as workflow_services
from designer.workflows.operations import apply_all
from designer.workflows.patch import apply_patch, json_patch
from designer.workflows.services import document_at
from tests.designer.clients import client_for, inspector

pytestmark = pytest.mark.django_db


def _chain(size: int) -> dict[str, Any]:
    names = [f"step_{n:03d}" for n in range(size)]
    return {
        "id": "chain",
        "input_schema": {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}}},
        "state_schema": {"type": "object", "properties": {name: {"type": "string"} for name in names}},
        "nodes": [{"id": "each", "kind": "foreach", "over": "input.items"}]
        + [{"id": name, "kind": "task", "task": "set_value", "output": [{"source": ".", "target": name}]}
           for name in names],
        "routes": [{"source": "each", "label": "loop", "target": names[0]}]
        + [{"source": name, "label": "ok", "target": names[n + 1] if n + 1 < size else "each"}
           for n, name in enumerate(names)],
    }


@pytest.fixture
def chain(cast: Any) -> Any:
    return cast.workflow("Chain", _chain(60))


def _send(client: Client, workflow: Any, ops: list[dict[str, Any]], **extra: Any) -> Any:
    body = {"revision": workflow.revision, "ops": ops, **extra}
    return client.post(f"/workflows/{workflow.pk}/edit/change/", json.dumps(body), content_type="application/json")


def test_a_move_is_answered_with_one_replace_and_no_analysis(cast: Any, chain: Any) -> None:
    before = copy.deepcopy(chain.document)
    move = {"op": "move_nodes", "positions": {"step_007": {"x": 5, "y": 6}}}
    response = _send(client_for(cast.editor), chain, [move], answer="patch")
    assert response.status_code == 200
    data = response.json()
    assert data["revision"] == chain.revision + 1 and data["base_revision"] == chain.revision
    assert data["patch"] == [{"op": "add", "path": "/metadata/positions", "value": {"step_007": {"x": 5, "y": 6}}}]
    assert "document" not in data and "analysis" not in data and "diagnostics" not in data
    assert data["undo"] == [{"op": "move_nodes", "positions": {"step_007": None}}]
    chain.refresh_from_db()
    assert apply_patch(before, data["patch"]) == chain.document

    # The next move only replaces what it moved.
    before = copy.deepcopy(chain.document)
    data = _send(client_for(cast.editor), chain, [{"op": "move_nodes", "positions": {"step_007": {"x": 55, "y": 6}}}],
                 answer="patch").json()
    assert data["patch"] == [{"op": "replace", "path": "/metadata/positions/step_007/x", "value": 55}]
    assert len(json.dumps(data)) < 300


def test_a_moves_saved_draft_is_the_stored_one(cast: Any, chain: Any) -> None:
    # A metadata-only save reads back only the revision and time: what it answers must still be the stored row.
    moved = {**chain.document, "metadata": {"positions": {"each": {"x": 1, "y": 2}}}}
    saved = workflow_services.save_document(actor=cast.editor, workflow=chain, revision=chain.revision,
                                            document=moved).workflow
    stored = Workflow.objects.get(pk=chain.pk)
    assert (saved.revision, saved.updated_at) == (stored.revision, stored.updated_at)
    assert json.dumps(saved.document) == json.dumps(stored.document)


def test_an_edit_that_changes_the_analysis_carries_it(cast: Any, chain: Any) -> None:
    before = copy.deepcopy(chain.document)
    data = _send(client_for(cast.editor), chain, [{"op": "disconnect", "source": "step_030", "label": "ok"}],
                 answer="patch").json()
    # Everything after step_030 became unreachable: the analysis and diagnostics come with the patch.
    assert "step_031" not in data["analysis"]["reachable"]
    assert data["diagnostics"] == data["analysis"]["diagnostics"]
    assert any(d["node_id"] == "step_031" for d in data["diagnostics"])
    chain.refresh_from_db()
    assert apply_patch(before, data["patch"]) == chain.document


def test_without_asking_the_answer_is_the_whole_document(cast: Any, chain: Any) -> None:
    data = _send(client_for(cast.editor), chain, [{"op": "move_nodes", "positions": {"each": {"x": 1, "y": 2}}}]).json()
    assert data["document"]["metadata"]["positions"] == {"each": {"x": 1, "y": 2}}
    assert "patch" not in data and data["analysis"]["reachable"]


def test_a_conflict_is_the_same_409_when_a_patch_was_asked_for(cast: Any, chain: Any) -> None:
    body = {"revision": chain.revision - 1, "ops": [{"op": "move_nodes", "positions": {"each": {"x": 1, "y": 2}}}],
            "answer": "patch"}
    response = client_for(cast.editor).post(f"/workflows/{chain.pk}/edit/change/", json.dumps(body),
                                            content_type="application/json")
    assert response.status_code == 409
    assert response.json()["current_revision"] == chain.revision


@pytest.mark.parametrize(("before", "after"), [
    ({"a": 1}, {"a": True}),  # same in Python, not in JSON
    ({"a": 1.0}, {"a": 1}),
    ({"list": [1, 2, 3, 4]}, {"list": [1, 3, 4]}),
    ({"list": [1, 2, 3]}, {"list": [0, 1, 2, 3, 9]}),
    ({"list": [{"id": "x", "v": 1}, {"id": "y"}]}, {"list": [{"id": "x", "v": 2}, {"id": "y"}]}),
    ({"a/b": {"~": 1}}, {"a/b": {"~": 2}}),
    ({"gone": 1, "kept": None}, {"kept": None, "new": []}),
])
def test_a_patch_turns_the_one_document_into_the_other(before: Any, after: Any) -> None:
    patch = json_patch(before, after)
    assert patch
    assert json.dumps(apply_patch(copy.deepcopy(before), patch)) == json.dumps(after)
    assert json_patch(after, copy.deepcopy(after)) == []


def test_a_big_state_schema_opens_on_demand_in_the_workflow_settings(cast: Any, chain: Any) -> None:
    client = client_for(cast.editor)
    assert len(chain.document["state_schema"]["properties"]) > BUILDER_INLINE_FIELDS
    page = client.get(f"/workflows/{chain.pk}/edit/").content.decode()
    assert "schema-builder--collapsed" in page and "60 fields:" in page and "and 52 more" in page
    assert 'name="f.0:name" value="step_000"' not in page  # no row of the state schema's form
    # The small input schema is drawn in place, as before.
    assert 'name="f.0:name" value="items"' in page
    opened = client.get(f"/workflows/{chain.pk}/edit/schema-builder/",
                        {"schema_key": "state_schema", "node": ""}).content.decode()
    assert opened.count('aria-label="Field name"') == 60 and "Save state schema" in opened
    # A viewer sees the builder too (read-only), an unknown schema is refused.
    assert client_for(cast.viewer).get(f"/workflows/{chain.pk}/edit/schema-builder/",
                                       {"schema_key": "state_schema"}).status_code == 200
    assert client.get(f"/workflows/{chain.pk}/edit/schema-builder/", {"schema_key": "nope"}).status_code == 400


def _picker(page: str, opening: str) -> str:
    start = page.index(opening)
    return page[start:page.index("</select>", start)]


def test_the_workflow_settings_long_pickers_are_sent_with_one_option_and_the_rest_on_demand(cast: Any) -> None:
    """The start picker and the output-path picker of a big graph: the page holds the option each shows, selected,
    and the address of the rest; that address answers the whole list, as a short picker renders it inline: every
    node for the start (the chosen one selected), every input and state path the analyzer offers at the start,
    each with its type, Input before State. A short list stays inline."""
    client = client_for(cast.editor)
    size = SELECT_INLINE_OPTIONS + 10
    doc = _chain(size)
    big = cast.workflow("Big", {**doc, "start": "step_003"})
    page = client.get(f"/workflows/{big.pk}/edit/").content.decode()
    options_url = f"/workflows/{big.pk}/edit/picker-options/"
    start = _picker(page, '<select id="settings-start"')
    assert start.count("<option") == 1 and '<option value="step_003" selected>step_003</option>' in start
    assert f'data-options-url="{options_url}?picker=start"' in start
    answered = client.get(options_url, {"picker": "start"}, HTTP_HX_REQUEST="true")
    assert answered.status_code == 200
    stashed = answered.content.decode()
    assert stashed.count("<option") == size + 2  # "(the first node)", the foreach, the chain
    assert '<option value="step_003" selected>' in stashed and stashed.count("selected") == 1
    path = _picker(page, '<select name="path" aria-label="Output path"')
    assert path.count("<option") == 1 and '<option value="input" selected>input (object)</option>' in path
    assert f'data-options-url="{options_url}?picker=output-path"' in path
    stashed = client.get(options_url, {"picker": "output-path"}).content.decode()
    offered = [(group["title"], f'{option["path"]} ({option["type"]})')
               for group in panels.workflow_output_paths(doc_analysis.analysis_for(big)) for option in group["options"]]
    assert len(offered) > size
    listed = re.findall(r'<optgroup label="(\w+)">|<option value="([^"]*)">([^<]*)</option>', stashed)
    group, answered_options = "", []
    for title, value, label in listed:
        group = title or group
        if not title:
            assert label.startswith(value + " (")  # the value is the path the label shows
            answered_options.append((group, html.unescape(label)))
    assert answered_options == offered

    # A short list stays inline, with no address.
    small = cast.workflow("Small", _chain(5))
    page = client.get(f"/workflows/{small.pk}/edit/").content.decode()
    assert "data-options-url" not in page
    assert _picker(page, '<select id="settings-start"').count("<option") == 7


def test_a_nodes_long_state_field_picker_is_sent_with_its_first_field_and_the_way_to_a_new_one(cast: Any) -> None:
    """A node's output binding to one of many state fields: the panel holds the first field, selected, and "new state
    field…"; the rest come on demand, each with its type as the analyzer has it, "new state field…" last."""
    client = client_for(cast.editor)
    size = SELECT_INLINE_OPTIONS + 10
    big = cast.workflow("Big", _chain(size))
    fields = panels.state_field_types(doc_analysis.analysis_for(big))
    assert len(fields) >= size
    panel = inspector(client, big, node="step_003")
    picker = _picker(panel, '<select name="target" aria-label="State field"')
    first = fields[0]
    assert picker.count("<option") == 2
    assert f'<option value="{first["name"]}" selected>state.{first["name"]} ({first["type"]})</option>' in picker
    assert '<option value="">new state field…</option>' in picker
    assert f'data-options-url="/workflows/{big.pk}/edit/picker-options/?picker=state-field"' in picker
    answered = client.get(f"/workflows/{big.pk}/edit/picker-options/", {"picker": "state-field"}).content.decode()
    listed = [(value, html.unescape(label)) for value, label in re.findall(r'<option value="([^"]*)">([^<]*)</option>',
                                                                            answered)]
    assert listed == [(f["name"], f"state.{f['name']} ({f['type']})") for f in fields] + [("", "new state field…")]
    # A short list stays inline.
    small = cast.workflow("Small", _chain(5))
    picker = _picker(inspector(client, small, node="step_003"), '<select name="target" aria-label="State field"')
    assert "data-options-url" not in picker and picker.count("<option") == len(
        panels.state_field_types(doc_analysis.analysis_for(small))) + 1


def test_a_long_pickers_options_are_a_read_for_the_workflows_team_only(cast: Any) -> None:
    big = cast.workflow("Big", _chain(SELECT_INLINE_OPTIONS + 10))
    url = f"/workflows/{big.pk}/edit/picker-options/"
    assert client_for(cast.viewer).get(url, {"picker": "start"}).status_code == 200  # as the settings panel
    assert client_for(cast.stranger).get(url, {"picker": "start"}).status_code == 404
    refused = client_for(cast.editor).get(url, {"picker": "nodes"})
    assert refused.status_code == 400
    assert "No such picker: &#x27;nodes&#x27; (start, output-path, state-field)" in refused.content.decode()
    assert client_for(cast.editor).post(url, {"picker": "start"}).status_code == 405  # a read, never a write


def test_a_patch_answer_names_the_revision_it_was_made_on_when_a_save_landed_in_between(
    cast: Any, chain: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Someone else saves between this edit's read and its write: the edit is rebased and saved one revision
    later, and its patch is from the draft it was applied to (the other person's), named by that revision. (It
    was named ``revision - 1`` while made from the draft first read: a client holding the other person's draft
    applied it there and removed a second route, showing the newest revision with the wrong routes.)"""
    real_save = workflow_services.save_document
    first_read = chain.revision
    calls: list[int] = []

    def save_after_someone_else(**kwargs: Any) -> Any:
        calls.append(kwargs["revision"])
        if len(calls) == 1:  # the other person's edit lands first: a route of step_010 cut
            other = Workflow.objects.get(pk=chain.pk)
            cut = [{"op": "disconnect", "source": "step_010", "label": "ok"}]
            real_save(actor=cast.owner, workflow=other, revision=other.revision,
                      document=apply_all(other.document, cut).document, operations=cut, client="other-tab")
        return real_save(**kwargs)

    monkeypatch.setattr(workflow_services, "save_document", save_after_someone_else)
    move = {"op": "move_nodes", "positions": {"step_040": {"x": 5, "y": 6}}}
    data = _send(client_for(cast.editor), chain, [move], answer="patch").json()
    assert calls == [first_read, first_read + 1]  # refused once, rebased onto the other person's save
    assert data["revision"] == first_read + 2 and data["base_revision"] == first_read + 1
    others = DraftOperation.objects.get(workflow=chain, revision=first_read + 1)
    theirs = document_at(Workflow.objects.get(pk=chain.pk), others.revision)
    chain.refresh_from_db()
    assert apply_patch(copy.deepcopy(theirs), data["patch"]) == chain.document
    assert len(chain.document["routes"]) == len(_chain(60)["routes"]) - 1


def test_the_diagnostics_panel_comes_with_an_edit_that_changes_it(cast: Any, chain: Any) -> None:
    """The canvas shows the diagnostics panel from the edit's answer (issue 28): drawn by the server only when the
    diagnostics changed; a panel's form answer carries it out of band."""
    client = client_for(cast.editor)
    moved = _send(client, chain, [{"op": "move_nodes", "positions": {"each": {"x": 1, "y": 2}}}], answer="patch").json()
    assert "diagnostics_panel" not in moved
    chain.refresh_from_db()
    cut = _send(client, chain, [{"op": "disconnect", "source": "step_030", "label": "ok"}], answer="patch").json()
    panel = cut["diagnostics_panel"]
    assert 'data-testid="error-count"' in panel and 'data-focus-node="step_031"' in panel
    chain.refresh_from_db()
    answer = client.post(f"/workflows/{chain.pk}/edit/change/", {
        "revision": chain.revision, "action": "connect", "node": "step_030", "source": "step_030", "label": "ok",
        "target": "step_031"}, HTTP_HX_REQUEST="true").content.decode()
    assert 'id="diagnostics" hx-swap-oob="innerHTML"' in answer
    assert 'data-focus-node="step_031"' not in answer.split('id="diagnostics"')[1]
