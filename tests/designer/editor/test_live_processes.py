"""The live feed across web processes: a tab's waiting feed request, served by one process, hears a change that
another process saved, because the draft's log in the database is the feed's only source (no process-local
channel). Runs on SQLite and, in CI's second leg, on PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.conftest import REPO_ROOT
from tests.designer.clients import client_for
from tests.designer.editor.test_live import DOC

pytestmark = pytest.mark.django_db(transaction=True)

# A second web process: Django's test client in its own interpreter, on the test's database. It signs in, asks
# the feed for what comes after the revision it knows, says "waiting" once the feed has looked and found nothing
# new (its first pause between looks), and prints the answer.
_OTHER_PROCESS = """
import json, sys, time, types
import django
django.setup()
from designer.editor import live

def pause(seconds, said=[]):
    if not said:
        said.append(True)
        print("waiting", flush=True)
    time.sleep(seconds)

live.time = types.SimpleNamespace(monotonic=time.monotonic, sleep=pause)
from django.contrib.auth import get_user_model
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()  # as in the test process: the test client's host is allowed
client = Client()
client.force_login(get_user_model().objects.get(pk=int(sys.argv[1])))
answer = client.get(f"/workflows/{sys.argv[2]}/edit/live/", json.loads(sys.argv[3]))
print(json.dumps({"status": answer.status_code, "body": answer.json()}), flush=True)
"""


def test_a_feed_waiting_in_another_process_hears_a_change_saved_in_this_one(cast: Any, worker_env: dict[str, str],
                                                                            settings: Any) -> None:
    settings.TRELLIS_LIVE_WAIT_SECONDS = 0  # this process's own feed calls answer at once
    two = cast.workflow("Two", DOC)
    owner = client_for(cast.owner)
    known = owner.get(f"/workflows/{two.pk}/edit/live/", {"after": two.revision}).json()
    assert known["entries"] == []
    # Everything the tab knows, so only a new revision ends the other process's wait; the wait is longer than
    # the test lets it run, so an answer means the change was heard, not that the wait ran out.
    cursor = {"after": two.revision, "presence": known["presence_token"]}
    other = subprocess.Popen(
        [sys.executable, "-c", _OTHER_PROCESS, str(cast.viewer.pk), str(two.pk), json.dumps(cursor)],
        cwd=REPO_ROOT, env={**worker_env, "TRELLIS_LIVE_WAIT_SECONDS": "120"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None
        assert other.stdout.readline().strip() == "waiting", other.stderr.read() if other.stderr else ""
        body = {"revision": two.revision, "client": "tab-here",
                "ops": [{"op": "set_basics", "node": "b", "id": "b", "name": "Bee"}]}
        saved = owner.post(f"/workflows/{two.pk}/edit/change/", json.dumps(body), content_type="application/json")
        assert saved.status_code == 200, saved.content
        out, err = other.communicate(timeout=60)
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()
    assert out.strip(), err
    answer = json.loads(out.strip().splitlines()[-1])
    assert answer["status"] == 200, err
    feed = answer["body"]
    assert feed["revision"] == two.revision + 1 and feed["resync"] is False
    assert [(e["revision"], e["client"], e["by"], e["ops"]) for e in feed["entries"]] == [
        (two.revision + 1, "tab-here", "olivia", ["set_basics"])]
