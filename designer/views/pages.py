"""Small helpers shared by the run and team pages.

Pages call services and selectors directly. Their errors are the designer's
own (``designer.errors``): an invisible object must look exactly like a
missing page (404), a role that is too low is a 403 page, and anything else
is shown next to the form that caused it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.views.decorators.http import require_http_methods

from designer.errors import ActionForbidden, ObjectNotFound


def designer_errors[F: Callable[..., HttpResponse]](view: F) -> F:
    """Turn ``ObjectNotFound`` into Django's 404 and ``ActionForbidden`` into its 403."""

    @wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(*args, **kwargs)
        except ObjectNotFound as exc:
            raise Http404(exc.message) from exc
        except ActionForbidden as exc:
            raise PermissionDenied(exc.message) from exc

    return wrapped  # type: ignore[return-value]


def signed_in[F: Callable[..., HttpResponse]](*methods: str) -> Callable[[F], F]:
    """A page for signed-in users only, answering only ``methods`` (405 otherwise), with the designer's errors
    as 404/403 pages: ``login_required``, ``require_http_methods`` and ``designer_errors``, in that order."""

    def decorate(view: F) -> F:
        return login_required(require_http_methods(list(methods))(designer_errors(view)))  # type: ignore[return-value]

    return decorate


def error_message(exc: BaseException) -> str:
    """The readable message of a designer or runtime error."""
    message = getattr(exc, "message", None)
    return str(message if isinstance(message, str) and message else exc)
