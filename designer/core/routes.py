"""Routes declared as a table, one a line: ``<route> <view> <name>``.

Every domain's ``urls.py`` (pages) and ``api.py`` (under the ``api`` namespace) lists its routes this way, so a
domain's site map reads as the table it is, and a route names its view once. A view is looked up by name in the
modules given; a class-based view (the API's) is mounted with ``as_view()``. A name found in none of them, or in
more than one, stops the URLconf from loading, naming the line.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, cast

from django.urls import URLPattern, path


def routes(table: str, *modules: ModuleType) -> list[URLPattern]:
    patterns = []
    for line in table.strip().splitlines():
        route, view_name, name = line.split()
        found = [getattr(module, view_name) for module in modules if hasattr(module, view_name)]
        if len(found) != 1:
            where = ", ".join(module.__name__ for module in modules)
            raise LookupError(f"route {route!r}: {view_name!r} is in {len(found)} of {where}, not exactly one")
        view: Any = found[0]
        if isinstance(view, type):
            view = cast(Any, view).as_view()
        patterns.append(path(route, view, name=name))
    return patterns
