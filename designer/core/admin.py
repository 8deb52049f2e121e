"""What the admin pages share: read-only admins and JSON fields shown pretty-printed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from designer.core.json_text import pretty_json_html


class ReadOnly:
    """An admin (or inline) that shows rows but adds and changes none: something else writes them."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def json_field(attribute: str, description: str) -> Callable[[Any, Any], str]:
    """A read-only admin field that shows the JSON in ``attribute`` of the row, pretty-printed."""

    @admin.display(description=description)
    def shown(model_admin: Any, row: Any) -> str:
        return pretty_json_html(getattr(row, attribute))

    return shown
