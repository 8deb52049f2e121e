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
from django.contrib import messages
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.core.files.uploadhandler import FileUploadHandler
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse

from designer.conf import trellis

TOO_MUCH = (RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent)


def max_upload_bytes() -> int:
    configured = trellis.MAX_UPLOAD_BYTES
    if configured is not None:
        return configured
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


def too_much_message(request: HttpRequest, exception: Exception) -> str:
    """What was too large, in the words the import page uses for a file over its limit."""
    if isinstance(exception, TooManyFieldsSent):
        return f"the form has more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} fields"
    if isinstance(exception, TooManyFilesSent):
        return f"the request carries more than {settings.DATA_UPLOAD_MAX_NUMBER_FILES} files"
    limit = int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0)
    if str(request.META.get("CONTENT_TYPE", "")).startswith("multipart/"):
        # Over twice the import limit: the file in it is over the limit itself.
        return f"the file is larger than {limit} bytes"
    return f"the request body is larger than {limit} bytes"


def too_large(request: HttpRequest, exception: Exception) -> HttpResponse:
    message = too_much_message(request, exception)
    if request.path.startswith(("/api/", "/hooks/")):
        return JsonResponse({"code": "request.too_large", "message": message}, status=413)
    if request.path == reverse("workflow-import") and getattr(request, "_messages", None) is not None:
        messages.error(request, f"Could not import: {message}.")
        return redirect("home")
    return TemplateResponse(request, "errors/too_large.html", {"message": message}, status=413)


class RequestSizeMiddleware:
    """Listed just before CsrfViewMiddleware: reads a POST body first, so its size errors are ours."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response: HttpResponse = self.get_response(request)
        return response

    def process_view(self, request: HttpRequest, view: Any, args: Any, kwargs: Any) -> HttpResponse | None:
        if request.method != "POST":
            return None
        try:
            request.POST  # noqa: B018 - parsing is the point: the CSRF check would do it next
            request.FILES  # noqa: B018
        except TOO_MUCH as exc:
            request._mark_post_parse_error()  # type: ignore[attr-defined]  # as Django does: never parse it again
            return too_large(request, exc)
        return None
