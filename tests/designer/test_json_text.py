"""The one JSON format the pages, the admin and exports show people."""

from __future__ import annotations

from datetime import UTC, datetime

from designer.core.json_text import pretty_json, pretty_json_html


def test_pretty_json_keeps_stored_key_order_and_unicode() -> None:
    assert pretty_json({"b": 1, "a": ["é", None]}) == '{\n  "b": 1,\n  "a": [\n    "é",\n    null\n  ]\n}'


def test_pretty_json_shows_what_json_cannot_hold_as_text() -> None:
    assert pretty_json({"at": datetime(2026, 1, 2, tzinfo=UTC)}) == '{\n  "at": "2026-01-02 00:00:00+00:00"\n}'


def test_pretty_json_html_escapes_and_shows_nothing_as_a_dash() -> None:
    assert pretty_json_html(None) == pretty_json_html("") == "—"
    html = pretty_json_html({"x": "<script>"})
    assert html.startswith("<pre") and "&lt;script&gt;" in html and "<script>" not in html
    assert pretty_json_html(0) != "—" and pretty_json_html([]) != "—"
