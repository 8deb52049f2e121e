"""Multipart bodies are refused by size before they are read (uploaded files escape
DATA_UPLOAD_MAX_MEMORY_SIZE), while a file just over the import limit still gets a readable message."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from designer.models import Workflow
from tests.designer.clients import client_for

pytestmark = pytest.mark.django_db


def _client(user: Any) -> Client:
    """A crash in a view comes back as the 500 page a browser would see."""
    return client_for(user, raise_request_exception=False)


@pytest.fixture
def small_limits(settings: Any) -> int:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    return 10_000


GENERIC = ("Bad Request (400)", "RequestDataTooBig", "Request body exceeded")


@pytest.mark.parametrize("debug", [False, True])
def test_a_huge_upload_is_refused_before_the_view_runs_with_the_import_message(
        cast: Any, small_limits: int, settings: Any, debug: bool) -> None:
    settings.DEBUG = debug  # with DEBUG, Django would show its technical page instead of handler400
    before = Workflow.objects.count()
    huge = SimpleUploadedFile("huge.json", b" " * (small_limits * 5), content_type="application/json")

    response = _client(cast.owner).post(reverse("workflow-import"), {"team": cast.team.pk, "file": huge},
                                        follow=True)

    body = response.content.decode()
    assert response.redirect_chain == [(reverse("home"), 302)]
    assert f"Could not import: the file is larger than {small_limits} bytes." in body
    assert not any(text in body for text in GENERIC)
    assert Workflow.objects.count() == before


def test_a_huge_upload_to_the_api_is_a_json_413(cast: Any, small_limits: int) -> None:
    huge = SimpleUploadedFile("huge.json", b" " * (small_limits * 5), content_type="application/json")

    response = _client(cast.owner).post(reverse("api:workflow-import"), {"team": cast.team.pk, "file": huge})

    assert response.status_code == 413
    assert response.json() == {"code": "request.too_large",
                               "message": f"the file is larger than {small_limits} bytes"}


def test_a_json_body_over_the_limit_is_a_json_413(cast: Any, small_limits: int) -> None:
    response = _client(cast.owner).post(reverse("api:workflow-import"), {"team": cast.team.pk,
                                                                         "document": {"x": "y" * small_limits}},
                                        content_type="application/json")

    assert response.status_code == 413
    assert response.json()["message"] == f"the request body is larger than {small_limits} bytes"


def test_a_form_over_the_limits_gets_the_apps_page(cast: Any, workflow: Any, small_limits: int,
                                                   settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 50
    client = _client(cast.editor)
    url = reverse("run-start", args=[workflow.pk])

    form = "application/x-www-form-urlencoded"
    big = client.post(url, urlencode({"_json": "x" * (small_limits + 1)}), content_type=form)
    many = client.post(url, urlencode({f"field.f{i}": "1" for i in range(60)}), content_type=form)

    assert big.status_code == 413 and many.status_code == 413
    assert f"the request body is larger than {small_limits} bytes" in big.content.decode()
    assert "the form has more than 50 fields" in many.content.decode()
    assert not any(text in big.content.decode() + many.content.decode() for text in GENERIC)


def test_a_file_just_over_the_limit_gets_the_import_message(cast: Any, small_limits: int) -> None:
    over = SimpleUploadedFile("over.json", b" " * (small_limits + 100), content_type="application/json")

    response = _client(cast.owner).post(reverse("workflow-import"), {"team": cast.team.pk, "file": over},
                                        follow=True)

    assert response.status_code == 200
    assert f"the file is larger than {small_limits} bytes" in response.content.decode()
