"""The API's one exception handler: every error becomes ``{code, message, ...}`` JSON.

Designer errors and runtime ``WorkflowError``s carry their own stable codes
and structured details; DRF's own errors get codes of ours so clients never
see two shapes; anything unexpected is logged and answered with a generic 500
body (never a traceback).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.views import set_rollback

from designer.core.errors import DesignerError, status_of
from designer.core.refusals import log_refusal
from designer.core.uploads import TOO_MUCH, too_much_message
from runtime import WorkflowError

logger = logging.getLogger("designer.api")


def _jsonable(payload: dict[str, Any]) -> dict[str, Any]:
    # Details are structured data by convention, but an odd object must not turn a 4xx into a 500.
    result: dict[str, Any] = json.loads(json.dumps(payload, default=str))
    return result


#: DRF's name for errors about the body as a whole (e.g. a list where an object belongs); clients
#: read "(request body)" more easily than an internal key.
_WHOLE_BODY = "non_field_errors"


def _flatten(detail: Any, loc: str = "") -> list[dict[str, str]]:
    if isinstance(detail, dict):
        out: list[dict[str, str]] = []
        for key, value in detail.items():
            name = "(request body)" if key == _WHOLE_BODY and not loc else str(key)
            out += _flatten(value, f"{loc}.{name}" if loc else name)
        return out
    if isinstance(detail, list):
        if all(not isinstance(item, (dict, list)) for item in detail):
            return [{"loc": loc or "(request)", "msg": str(item)} for item in detail]
        out = []
        for index, item in enumerate(detail):
            out += _flatten(item, f"{loc}.{index}" if loc else str(index))
        return out
    return [{"loc": loc or "(request)", "msg": str(detail)}]


_DRF_CODES: list[tuple[type[drf.APIException], str]] = [
    (drf.NotAuthenticated, "auth.required"),
    (drf.AuthenticationFailed, "auth.failed"),
    (drf.PermissionDenied, "permission.denied"),
    (drf.NotFound, "not_found"),
    (drf.MethodNotAllowed, "method.not_allowed"),
    (drf.NotAcceptable, "request.not_acceptable"),
    (drf.UnsupportedMediaType, "request.unsupported_media_type"),
    (drf.ParseError, "request.malformed"),
    (drf.Throttled, "request.throttled"),
]


def _drf_body(exc: drf.APIException) -> tuple[int, dict[str, Any]]:
    if isinstance(exc, drf.ValidationError):
        errors = _flatten(exc.detail)
        message = "; ".join(f"{e['loc']}: {e['msg']}" for e in errors[:5]) or "invalid request"
        return 400, {"code": "request.invalid", "message": message, "errors": errors}
    code = next((code for klass, code in _DRF_CODES if isinstance(exc, klass)), f"api.{exc.default_code}")
    message = str(exc.detail) if not isinstance(exc.detail, (dict, list)) else str(exc.default_detail)
    if isinstance(exc, drf.PermissionDenied) and message.startswith("CSRF Failed"):
        code = "csrf.failed"
    return exc.status_code, {"code": code, "message": message}


def render_error(exc: BaseException, request: Any = None) -> tuple[int, dict[str, Any]] | None:
    """``(status, body)`` for a known error, None for an unexpected one (``request`` words a size refusal)."""
    if isinstance(exc, DesignerError):
        return exc.status, _jsonable(exc.to_dict())
    if isinstance(exc, WorkflowError):
        return status_of(exc), _jsonable(exc.to_dict())
    if isinstance(exc, Http404):
        return 404, {"code": "not_found", "message": "not found"}
    if isinstance(exc, TOO_MUCH):
        return 413, {"code": "request.too_large", "message": too_much_message(request, exc) if request else
                     "the request body is too large"}
    if isinstance(exc, drf.APIException):
        return _drf_body(exc)
    return None


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    rendered = render_error(exc, context.get("request"))
    if rendered is None:
        view = context.get("view")
        logger.exception("unexpected error in %s", type(view).__name__ if view else "API view", exc_info=exc)
        rendered = (500, {"code": "server.error", "message": "an unexpected error occurred; it has been logged"})
    status, body = rendered
    set_rollback()
    headers: dict[str, str] = {}
    if isinstance(exc, drf.Throttled) and exc.wait is not None:
        headers["Retry-After"] = str(int(exc.wait))
    elif isinstance(exc, DesignerError) and exc.status == 429 and exc.details.get("retry_after"):
        headers["Retry-After"] = str(int(exc.details["retry_after"]))
    if getattr(exc, "auth_header", None):
        # The token scheme's challenge, which DRF's default handler sets and makes the answer a 401.
        headers["WWW-Authenticate"] = exc.auth_header  # type: ignore[attr-defined]
    response = Response(body, status=status, headers=headers or None)
    if 400 <= status < 500 and context.get("request") is not None:
        log_refusal(context["request"], response, code=str(body.get("code")), message=str(body.get("message")))
    return response
