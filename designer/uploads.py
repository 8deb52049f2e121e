"""A ceiling on multipart request bodies, checked before any byte of them is read.

``DATA_UPLOAD_MAX_MEMORY_SIZE`` does not count uploaded files, so without this a
POST could make the server stream any amount into temporary files; the CSRF
check already parses the body, so even a request that is refused would. The
import page still answers files a little over its own limit with a readable
message: the ceiling is twice that limit.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.files.uploadhandler import FileUploadHandler


def max_upload_bytes() -> int:
    configured = getattr(settings, "TRELLIS_MAX_UPLOAD_BYTES", None)
    if configured is not None:
        return int(configured)
    return 2 * int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 2 * 1024 * 1024)


class BoundedUploadHandler(FileUploadHandler):
    """First in FILE_UPLOAD_HANDLERS: refuses the whole body by its Content-Length, else steps aside."""

    def handle_raw_input(self, input_data: Any, META: Any, content_length: int, boundary: Any,  # noqa: N803
                         encoding: str | None = None) -> None:
        limit = max_upload_bytes()
        if content_length > limit:
            raise RequestDataTooBig(f"the request body is {content_length} bytes; uploads are limited to {limit}")

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        return raw_data  # the next handler stores it

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler builds the file
