"""The route tables (designer/core/routes.py) every domain's urls.py and api.py declare."""

from __future__ import annotations

import types

import pytest
from django.urls import resolve, reverse
from rest_framework.views import APIView

from designer.core.routes import routes


def _page(request: object) -> None:
    return None


class _Endpoint(APIView):
    pass


def test_a_table_mounts_functions_as_they_are_and_classes_with_as_view() -> None:
    views = types.SimpleNamespace(__name__="views", page=_page, Endpoint=_Endpoint)
    first, second = routes("""
        things/<int:thing_id>/   page       thing-page
        api/things/              Endpoint   thing-list
    """, views)  # type: ignore[arg-type]
    assert (str(first.pattern), first.callback, first.name) == ("things/<int:thing_id>/", _page, "thing-page")
    assert second.callback.view_class is _Endpoint  # type: ignore[attr-defined]


@pytest.mark.parametrize("modules", [(), ("one", "two")])
def test_a_view_in_no_module_or_in_two_is_refused_naming_the_route(modules: tuple[str, ...]) -> None:
    found = [types.SimpleNamespace(__name__=name, page=_page) for name in modules]
    with pytest.raises(LookupError, match="'things/'.*'page'"):
        routes("things/ page thing-page", *found)  # type: ignore[arg-type]


def test_the_site_routes_resolve_through_the_tables() -> None:
    assert resolve(reverse("run-detail", args=[7])).func.__name__ == "run_detail"
    assert resolve(reverse("api:workflow-document", args=[7])).func.view_class.__name__ == "WorkflowDocumentView"
