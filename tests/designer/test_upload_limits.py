"""Multipart bodies are refused by size before they are read (uploaded files escape
DATA_UPLOAD_MAX_MEMORY_SIZE), while a file just over the import limit still gets a readable message."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from designer.models import Workflow

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_limits(settings: Any) -> int:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    return 10_000


def _client(user: Any) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def test_a_huge_upload_is_refused_before_the_view_runs(cast: Any, small_limits: int) -> None:
    before = Workflow.objects.count()
    huge = SimpleUploadedFile("huge.json", b" " * (small_limits * 5), content_type="application/json")

    response = _client(cast.owner).post(reverse("workflow-import"), {"team": cast.team.pk, "file": huge})

    assert response.status_code == 400
    assert Workflow.objects.count() == before


def test_a_file_just_over_the_limit_gets_the_import_message(cast: Any, small_limits: int) -> None:
    over = SimpleUploadedFile("over.json", b" " * (small_limits + 100), content_type="application/json")

    response = _client(cast.owner).post(reverse("workflow-import"), {"team": cast.team.pk, "file": over},
                                        follow=True)

    assert response.status_code == 200
    assert f"the file is larger than {small_limits} bytes" in response.content.decode()
