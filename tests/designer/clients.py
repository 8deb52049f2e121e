"""Django test clients for the designer's pages, logged in as a user, and the headers of an htmx request."""

from __future__ import annotations

from typing import Any

from django.test import Client


def client_for(user: Any, *, raise_request_exception: bool = True) -> Client:
    """A page client logged in as ``user``. ``raise_request_exception=False``: a view's crash comes back as
    the 500 page a browser would see instead of failing the test where it was raised."""
    client = Client(raise_request_exception=raise_request_exception)
    client.force_login(user)
    return client


def htmx(target: str) -> dict[str, str]:
    """The headers htmx sends for a request that swaps the element ``target``."""
    return {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": target}


def post_change(client: Client, workflow: Any, **data: Any) -> Any:
    """An htmx form post to the editor's change view; the revision is ``workflow.revision`` as loaded, unless
    ``data`` names one."""
    data.setdefault("revision", workflow.revision)
    return client.post(f"/workflows/{workflow.pk}/edit/change/", data, HTTP_HX_REQUEST="true")


def inspector(client: Client, workflow: Any, **params: str) -> str:
    """The editor's inspector panel (htmx), as HTML."""
    response = client.get(f"/workflows/{workflow.pk}/edit/inspector/", params, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    return response.content.decode()
