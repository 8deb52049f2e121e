"""Node kind icons are drawn once: the editor page's SVG symbols, which the palette and the canvas both use."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

from tests.designer.runs_support import REPO_ROOT

pytestmark = pytest.mark.django_db

ICONS_JSX = REPO_ROOT / "static" / "src" / "editor" / "icons.jsx"


def test_the_editor_page_holds_each_kind_icon_once_and_the_canvas_draws_none_itself(client: Any, cast: Any,
                                                                                   workflow: Any) -> None:
    client.force_login(cast.owner)
    page = client.get(reverse("editor", args=[workflow.pk])).content.decode()
    symbols = re.findall(r'<symbol id="wf-kind-(\w+)"', page)
    source = ICONS_JSX.read_text()
    kinds = re.findall(r'"(\w+)"', source.split("ICON_KINDS = [", 1)[1].split("]", 1)[0])
    assert sorted(symbols) == sorted(kinds) == sorted(["task", "foreach", "subgraph", "branch", "interrupt"])
    assert page.count("data-kind-icons") == 1
    # The palette uses the symbols; neither it nor icons.jsx repeats a drawing.
    palette = page.split('class="palette-item__icon"')[1:]
    assert palette and all("<use href=\"#wf-kind-" in item.split("</span>", 1)[0] for item in palette)
    assert not re.search(r"<(path|rect|circle)\b", source)
