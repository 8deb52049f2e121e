"""Small helpers shared by the run and team pages.

Pages call services and selectors directly. Their errors are the designer's
own (``designer.core.errors``): an invisible object must look exactly like a
missing page (404), a role that is too low is a 403 page, and anything else
is shown next to the form that caused it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views import defaults
from django.views.decorators.http import require_http_methods

from designer.core.errors import ActionForbidden, DesignerError, ObjectNotFound, status_of
from designer.core.refusals import log_refusal
from runtime import WorkflowError

#: The heading of the page that refuses an action, per status (any other 4xx: "Not done").
_REFUSED_TITLES = {400: "Not done: the request is wrong", 409: "Not done: the run is not in a state for this",
                   413: "Too large", 422: "Not done: the value does not fit", 429: "Too many requests"}


def refused_page(request: HttpRequest, exc: DesignerError | WorkflowError, *, back: str | None = None
                 ) -> HttpResponse:
    """The page answering a refused action: 404 and 403 as the site's own pages, anything else (a 409 run
    conflict, a 422 value) as a page with the status, the error's message and code. Logged as one line."""
    message = error_message(exc)
    code = str(getattr(exc, "code", "error"))
    response: HttpResponse
    if isinstance(exc, ObjectNotFound):
        response = defaults.page_not_found(request, Http404(message))
    elif isinstance(exc, ActionForbidden):
        response = defaults.permission_denied(request, exc)
    else:
        status = status_of(exc)
        status = status if 400 <= status < 500 else 400
        response = TemplateResponse(request, "errors/refused.html", {
            "title": _REFUSED_TITLES.get(status, "Not done"), "message": message, "code": code, "back": back},
            status=status).render()
    log_refusal(request, response, code=code, message=message)
    return response


def designer_errors[F: Callable[..., HttpResponse]](view: F) -> F:
    """Answer a designer or runtime error a view did not handle with ``refused_page`` (404, 403, or the error's
    own 4xx status), never a 500 with a traceback."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except (DesignerError, WorkflowError) as exc:
            run_id = kwargs.get("run_id")
            back = reverse("run-detail", args=[run_id]) if isinstance(run_id, int) else None
            return refused_page(request, exc, back=back)

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
