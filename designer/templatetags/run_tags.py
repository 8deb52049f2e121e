"""Template filters for the run, team and editor pages."""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from designer.core.json_text import pretty_json
from designer.runs.display import short_id as _short_id

register = template.Library()


@register.filter
def duration(ms: Any) -> str:
    """Milliseconds as a short human duration: ``850 ms``, ``3.2 s``, ``4 min 05 s``, ``2 h 03 min``."""
    if ms is None or ms == "":
        return "—"
    try:
        value = float(ms)
    except (TypeError, ValueError):
        return "—"
    if value < 1000:
        return f"{int(value)} ms"
    seconds = value / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


register.filter("pretty_json", pretty_json)


@register.filter
def compact_json(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))
    limit = int(limit)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@register.filter
def short_id(value: Any) -> str:
    return _short_id(str(value) if value else "")


@register.filter
def is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


@register.filter
def break_at_underscores(value: Any) -> SafeString:
    """A snake_case name that may wrap after each underscore (``assess_<wbr>request``) rather than mid-word in a
    narrow column; the text itself is unchanged (``<wbr>`` adds no character)."""
    return mark_safe(escape(value).replace("_", "_<wbr>"))  # noqa: S308 - escaped first, then only <wbr> added
