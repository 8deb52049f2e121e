"""A run page's side panels (a kept checkpoint, a frame's context) are links too: opened in a tab of their own, or
without htmx, they come inside the site's page; htmx gets the bare panel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from designer.models import RunCheckpoint, RunEvent
from tests.designer import runs_support
from tests.designer.runs_support import run_batch, run_detail, start_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_checkpoint_and_a_frame_open_as_pages_of_their_own(api: Any, cast: Any, env: dict[str, str],
                                                             tmp_path: Path) -> None:
    workflow = cast.workflow("Keys", runs_support.flaky_document())
    run = start_run(api(cast.editor), workflow, {"keys": ["a"], "folder": str(tmp_path)})
    run_batch(env)
    assert run_detail(api(cast.editor), run["id"])["status"] == "completed"
    frame_id = RunEvent.objects.filter(run_id=run["id"]).exclude(frame_id="").values_list("frame_id", flat=True)[0]
    step = RunCheckpoint.objects.filter(run_id=run["id"]).order_by("step").values_list("step", flat=True)[0]
    client = Client()
    client.force_login(cast.viewer)
    for url, title in ((reverse("run-checkpoint", args=[run["id"], step]), f"After superstep {step}"),
                       (reverse("run-frame", args=[run["id"], frame_id]), "Frame ")):
        page = client.get(url)
        body = page.content.decode()
        assert page.status_code == 200 and "<title>" + title in body and 'class="topbar"' in body, url
        assert f'<a href="{reverse("run-detail", args=[run["id"]])}">Run #{run["id"]}</a>' in body
        panel = client.get(url, HTTP_HX_REQUEST="true").content.decode()
        assert 'class="topbar"' not in panel and "<title>" not in panel and 'id="frame-panel"' in panel
