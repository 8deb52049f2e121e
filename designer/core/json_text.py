"""JSON as the pages, the admin and the exported files show it to people: one format everywhere."""

from __future__ import annotations

import json
from typing import Any

from django.utils.html import format_html


def pretty_json(value: Any) -> str:
    """Two-space indents, non-ASCII characters as they are, keys in their stored order; a value JSON cannot
    hold (a datetime in an event summary, say) as its ``str``."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def pretty_json_html(value: Any) -> str:
    """``pretty_json`` in a wrapping ``<pre>``, escaped, for admin read-only fields; a dash for nothing."""
    if value is None or value == "":
        return "—"
    return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', pretty_json(value))
