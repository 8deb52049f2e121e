"""Django's error handlers (``handler400/403/404/500``): JSON ``{code, message}`` on the API and webhook paths,
whatever failed before a view could answer (no route, a body over the size limit, a CSRF refusal), and the
site's own pages everywhere else. Machines calling /api/ or /hooks/ never get an HTML page."""

from __future__ import annotations

from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

from designer.core.refusals import log_refusal
from designer.core.uploads import TOO_MUCH, too_large

#: Path prefixes answered in JSON: the API, and the webhook endpoint other systems call.
MACHINE_PREFIXES = ("/api/", "/hooks/")


def for_machines(request: HttpRequest) -> bool:
    return request.path.startswith(MACHINE_PREFIXES) or request.path in ("/api", "/hooks")


def _json(request: HttpRequest, status: int, code: str, message: str) -> HttpResponse:
    response = JsonResponse({"code": code, "message": message}, status=status)
    if status < 500:
        log_refusal(request, response, code=code, message=message)
    return response


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if isinstance(exception, TOO_MUCH):
        return too_large(request, exception)
    if for_machines(request):
        detail = str(exception) if isinstance(exception, SuspiciousOperation) else ""
        return _json(request, 400, "request.invalid", detail or "the request could not be read")
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if for_machines(request):
        return _json(request, 403, "permission.denied", str(exception) or "not allowed")
    return defaults.permission_denied(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if for_machines(request):
        shown = request.path.encode("unicode_escape").decode("ascii")
        return _json(request, 404, "not_found", f"nothing at {shown}; see /api/docs/ for the endpoints")
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if for_machines(request):
        return _json(request, 500, "server.error", "an unexpected error occurred; it has been logged")
    return defaults.server_error(request)
