"""One log line per refused request: who asked, what for, and why it was refused.

A refusal (403, 404, 409, ...) is the app working as designed, so it is logged as a warning line without a
traceback. ``log_response`` marks the response as logged, so Django's request logger does not add a second line
(or, for an exception it converted itself, a traceback).
"""

from __future__ import annotations

import logging
from typing import Any

from django.http import HttpRequest, HttpResponseBase
from django.utils.log import log_response

logger = logging.getLogger("designer.refused")


def who(request: HttpRequest) -> str:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return "anonymous"
    return f"{user.get_username()} (user {user.pk})"


def log_refusal(request: HttpRequest | Any, response: HttpResponseBase, *, code: str, message: str) -> None:
    """Log ``response`` (a 4xx) as one line: ``refused <status> <method> <path> for <who>: <code>: <message>``."""
    # A message is one line whatever it quotes (a name with a newline must not forge a second log line).
    why = " ".join(str(message).split())
    path = getattr(request, "path", "?").encode("unicode_escape").decode("ascii")
    log_response("refused %s %s %s for %s: %s: %s", response.status_code, getattr(request, "method", "?"), path,
                 who(request), code, why, response=response, request=request, logger=logger)
