"""A JSON parser that enforces the body size limit.

DRF's parsers read the request stream directly, bypassing Django's
``DATA_UPLOAD_MAX_MEMORY_SIZE`` check, so a large document would be read
whole into memory. This one reads at most limit + 1 bytes, whatever the
Content-Length says (it may be absent or lie), and refuses NaN/Infinity and
JSON nested too deeply to process (``designer.core.untrusted.loads_json``).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, get_encoding

from designer.core.errors import RequestTooLarge
from designer.core.untrusted import json_error_message, loads_json

DEFAULT_LIMIT = 2 * 1024 * 1024


def body_limit() -> int:
    limit = getattr(settings, "DATA_UPLOAD_MAX_MEMORY_SIZE", None)
    return DEFAULT_LIMIT if limit is None else int(limit)


class LimitedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict[str, Any] | None = None
              ) -> Any:
        parser_context = parser_context or {}
        limit = body_limit()
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise RequestTooLarge(
                f"the request body is larger than {limit} bytes", limit=limit
            )
        encoding = get_encoding(parser_context)
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError as exc:
            raise ParseError(f"JSON parse error - the body is not {encoding} text: {exc.reason}") from None
        try:
            return loads_json(text)
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {json_error_message(exc)}") from None
