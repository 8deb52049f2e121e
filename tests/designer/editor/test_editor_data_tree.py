"""A node's data panel (the tree of paths to drag onto its rows) at scale: a subtree of more than
``panels.DATA_TREE_FOLD`` paths comes as one row whose button loads it in place (``edit/data-tree/``), folded again
below. Opened all the way, the panel still lists exactly the paths the analyzer says the node can read, each with
its type, in the same order and depth as unfolded; a 600-node workflow's node panel is no longer ~197 KB."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.test import Client

from bench.bench_editor_scale import document as scale_document
from designer.editor import panels
from designer.workflows import analysis as doc_analysis
from tests.designer.clients import client_for, inspector

pytestmark = pytest.mark.django_db

#: One row of the panel: a path to drag (its depth, path, shown leaf and type) or a folded subtree's button.
ROW = re.compile(
    r'<li class="data-item d(?P<depth>\d+)"(?P<focus> tabindex="-1" autofocus)?(?P<drag> draggable="true")?'
    r' data-drag-path="(?P<path>[^"]*)" title="[^"]*"><code>(?P<leaf>[^<]*)</code>'
    r' <span class="type">(?P<type>[^<]*)</span></li>'
    r'|<li class="data-more d(?P<more_depth>\d+)"(?P<more_focus> tabindex="-1" autofocus)?>'
    r'<button[^>]* hx-get="(?P<url>[^"]+)"[^>]*>(?P<label>[^<]*)</button></li>')
RUN_ID = re.compile(r"^context\.foreach\.[^.]+\.[^.]+_id$")


def _fields(prefix: str, count: int, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": {**{f"{prefix}_{n:02d}": {"type": "string"} for n in range(count)},
                                             **(extra or {})}}


def _nested() -> dict[str, Any]:
    """``input.catalog`` holds 45 strings and ``deep``, an object of 45 more: 92 paths below ``input``."""
    catalog = _fields("name", 45, {"deep": _fields("code", 45)})
    return {"id": "nested", "input_schema": {"type": "object", "properties": {"catalog": catalog}},
            "nodes": [{"id": "use", "kind": "task", "task": "set_value"}], "routes": []}


def _panel(page: str) -> str:
    start = page.index('data-testid="data-panel"')
    return page[start:page.index("</details>", start)]


def _rows(text: str, *, loaded: bool = False) -> list[dict[str, Any]]:
    """The rows of a panel, or (``loaded``) of a folded subtree's answer, whose first row alone takes the focus
    from the button it replaces."""
    found = [{key: value for key, value in match.groupdict().items() if value is not None}
             for match in ROW.finditer(text)]
    focused = [row.pop("focus", row.pop("more_focus", None)) is not None for row in found]
    assert focused == ([loaded] + [False] * (len(found) - 1) if found else []), focused
    return found


def _opened(client: Client, rows: list[dict[str, Any]], asked: list[str]) -> list[dict[str, Any]]:
    """``rows`` with every folded subtree loaded in place, as pressing each button would, all the way down; each
    button said how many paths it holds, and what it loads sits deeper than it."""
    whole: list[dict[str, Any]] = []
    for row in rows:
        if "url" not in row:
            whole.append(row)
            continue
        url = html.unescape(row["url"])
        asked.append(url)
        answer = client.get(url, HTTP_HX_REQUEST="true")
        assert answer.status_code == 200, answer.content
        loaded = _rows(answer.content.decode(), loaded=True)
        assert all(int(r.get("depth", r.get("more_depth", -1))) >= int(row["more_depth"]) for r in loaded), url
        below = _opened(client, loaded, asked)
        assert re.fullmatch(rf"Show the {len(below)} paths under \S+", row["label"]), (row["label"], len(below))
        whole.extend(below)
    return whole


def _readable(workflow: Any, node_id: str) -> dict[str, str]:
    """What the analyzer says ``node_id`` can read (a loop's run ids aside: the picker folds them away), by type."""
    report = doc_analysis.node_report(doc_analysis.analysis_for(workflow), node_id)
    return {option["path"]: option["type"] for option in report["path_options"] if not RUN_ID.match(option["path"])}


def test_a_big_subtree_is_one_row_and_opened_it_is_exactly_what_the_node_can_read(cast: Any) -> None:
    workflow = cast.workflow("Nested", _nested())
    client = client_for(cast.editor)
    rows = _rows(_panel(inspector(client, workflow, node="use")))
    # input, then one row for its 92 paths: nothing of the catalog is sent until asked for; the (empty) state.
    assert [(r.get("path"), r.get("label")) for r in rows] == [
        ("input", None), (None, "Show the 92 paths under input"), ("state", None)]

    asked: list[str] = []
    whole = _opened(client, rows, asked)
    # Opened, the catalog folds again (91 below it), and inside it deep (45 below it).
    assert [url.rsplit("under=", 1)[1] for url in asked] == ["input", "input.catalog", "input.catalog.deep"]
    shown = {r["path"]: html.unescape(r["type"]) for r in whole}
    assert shown == _readable(workflow, "use")  # no path left out, none made up, each with its own type
    assert len(whole) == len(shown) == 94
    # In the order and at the depth the unfolded tree has them, each leaf its path's last segment.
    unfolded = [o for group in panels.data_tree(doc_analysis.analysis_for(workflow), "use", fold=10**6)
                for o in group.options]
    assert [(r["path"], int(r["depth"]), r["leaf"]) for r in whole] == [
        (o["path"], o["depth"], o["leaf"]) for o in unfolded]
    assert all(r.get("drag") for r in whole)  # an editor may drag each of them


def test_a_600_node_workflows_node_panel_sends_its_600_state_fields_when_asked(cast: Any) -> None:
    workflow = cast.workflow("Scale", scale_document(600))
    client = client_for(cast.editor)
    page = inspector(client, workflow, node="line_599")
    panel = _panel(page)
    rows = _rows(panel)
    assert [r.get("path", r.get("label")) for r in rows if "state" in r.get("path", r.get("label", ""))] == [
        "state", "Show the 600 paths under state"]
    # Was 196,683 bytes, 180,621 of them the data panel's 613 rows (whitespace, and the state's 600 fields).
    assert len(page.encode()) < 30_000 and len(panel.encode()) < 5_000, (len(page.encode()), len(panel.encode()))

    asked: list[str] = []
    whole = _opened(client, rows, asked)
    assert len(asked) == 1
    assert {r["path"]: html.unescape(r["type"]) for r in whole} == _readable(workflow, "line_599")
    state = [r for r in whole if r["path"].startswith("state.")]
    assert [r["path"] for r in state] == [f"state.line_{n:03d}" for n in range(600)]
    assert {r["type"] for r in state} == {"string"} and {r["depth"] for r in state} == {"1"}


def test_a_viewer_opens_a_folded_subtree_with_nothing_to_drag(cast: Any) -> None:
    workflow = cast.workflow("Nested", _nested())
    client = client_for(cast.viewer)
    rows = _rows(_panel(inspector(client, workflow, node="use")))
    whole = _opened(client, rows, [])
    assert len(whole) == 94 and not any(r.get("drag") for r in whole)


@pytest.mark.parametrize(("query", "message"), [
    ({"node": "use", "under": "input.nothing"}, "Node 'use' has no path 'input.nothing' to open in its data panel"),
    ({"node": "use"}, "Node 'use' has no path '' to open in its data panel"),
    ({"node": "gone", "under": "input"}, "No node 'gone' in this draft"),
])
def test_a_subtree_the_node_cannot_read_is_refused_saying_which(
        cast: Any, query: dict[str, str], message: str) -> None:
    workflow = cast.workflow("Nested", _nested())
    answer = client_for(cast.editor).get(f"/workflows/{workflow.pk}/edit/data-tree/", query, HTTP_HX_REQUEST="true")
    assert answer.status_code == 400
    body = answer.content.decode()
    assert "<code>request.invalid</code>" in body and html.escape(message) in body, body


def test_another_teams_workflow_data_tree_is_not_found(cast: Any) -> None:
    theirs = cast.their_workflow("Theirs", _nested())
    answer = client_for(cast.editor).get(f"/workflows/{theirs.pk}/edit/data-tree/", {"node": "use", "under": "input"},
                                         HTTP_HX_REQUEST="true")
    assert answer.status_code == 404
