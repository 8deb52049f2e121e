from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from designer.workflows.views import workflow_list


def home(request: HttpRequest) -> HttpResponse:
    """The landing page after login: the workflow list of the caller's teams."""
    return workflow_list(request)
