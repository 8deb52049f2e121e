"""Live co-editing: who else has a draft open, and every saved change as it lands.

The transport is the database and a short long-poll, chosen to fit the stack as it is: gunicorn's threaded
workers under ``manage.py serve`` (``make run``, SQLite) and several web processes on PostgreSQL, with no
channel layer, broker or ASGI server to add. Every save of a draft writes a ``DraftOperation`` row numbered by
the revision it made, in the transaction that stores the draft, so the log is the truth: a tab asks
``GET .../live/?after=<revision>`` and gets every change after the last revision it saw, in server order, none
lost and none twice across a dropped connection, whichever process answers. With nothing new the request waits
up to ``TRELLIS_LIVE_WAIT_SECONDS`` looking at three indexed rows every ``TICK`` seconds, and answers at once
when a change, a presence change or a new published version appears, so others see it well within a second.

A waiting request holds a gunicorn thread; at most half of a process's threads wait at once and the rest answer
at once (the tab asks again a moment later, a plain poll), so open editors never starve the site.

Presence is a row per open tab (``EditorPresence``): the tab posts its selection when it changes and every
``HEARTBEAT`` seconds; a tab not heard from for ``PRESENCE_SECONDS`` is gone.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from datetime import timedelta
from typing import Any

from django.db.models import Count, Max
from django.http import HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache

from designer.access.people import display_name
from designer.access.permissions import require_workflow_role
from designer.conf import trellis
from designer.core.errors import BadRequest
from designer.core.htmx import HtmxHttpRequest
from designer.core.pages import signed_in
from designer.core.untrusted import form_json
from designer.models import DraftOperation, EditorPresence, Workflow, WorkflowVersion
from designer.workflows import selectors as workflow_selectors

#: Seconds between two looks at the database while a feed request waits.
TICK = 0.2
#: A tab that has not posted its presence for this long has left (it posts every HEARTBEAT seconds).
PRESENCE_SECONDS = 30
HEARTBEAT = 10
#: Changes one answer carries at most; a tab further behind reloads the draft (``resync``).
MAX_ENTRIES = 200
_CLIENT = re.compile(r"[A-Za-z0-9_-]{1,64}")
_waiting = threading.BoundedSemaphore(max(1, trellis.WEB_THREADS // 2))
#: Colours of people's initials on the canvas, picked by user id (all with 4.5:1 contrast on white text).
COLOURS = ("#1f6feb", "#a2371f", "#1a7f37", "#8250df", "#9a6700", "#bf3989", "#0a7480", "#57606a")


def client_id(value: object) -> str:
    """The browser tab's id as it sent it, or empty when it is not one (then no change counts as its own)."""
    return value if isinstance(value, str) and _CLIENT.fullmatch(value) else ""


def initials(user: Any) -> str:
    words = [w for w in re.split(r"[\s._-]+", display_name(user)) if w]
    letters = "".join(w[0] for w in words[:2]) if len(words) > 1 else (words[0][:2] if words else "?")
    return letters.upper()


def _colour(user_id: int) -> str:
    return COLOURS[int(hashlib.sha1(str(user_id).encode()).hexdigest(), 16) % len(COLOURS)]


def _live(workflow_id: int) -> Any:
    cutoff = timezone.now() - timedelta(seconds=PRESENCE_SECONDS)
    return EditorPresence.objects.filter(workflow_id=workflow_id, seen_at__gte=cutoff)


def set_presence(*, actor: Any, workflow: Workflow, client: str, node: str = "", leave: bool = False) -> None:
    """Record (or end) one tab's presence on ``workflow`` (a viewer of it at least)."""
    require_workflow_role(actor, workflow, "viewer")
    if not client:
        raise BadRequest("send the tab's client id (letters, digits, - and _)", field="client")
    if leave:
        EditorPresence.objects.filter(workflow=workflow, client=client, user=actor).delete()
        return
    now = timezone.now()
    node = node[:200]
    row = EditorPresence.objects.filter(workflow=workflow, client=client).first()
    if row is None:
        # A tab that closed without saying so (a crash, a lost network) leaves its row: cleared as others join.
        EditorPresence.objects.filter(workflow=workflow, seen_at__lt=now - timedelta(hours=1)).delete()
        EditorPresence.objects.update_or_create(workflow=workflow, client=client, defaults={
            "user": actor, "node": node, "seen_at": now, "changed_at": now})
    elif row.user_id == actor.pk:
        changed = row.node != node or row.seen_at < now - timedelta(seconds=PRESENCE_SECONDS)
        row.node, row.seen_at = node, now
        if changed:
            row.changed_at = now
        row.save(update_fields=["node", "seen_at", "changed_at"])


def presence(workflow_id: int) -> list[dict[str, Any]]:
    rows = _live(workflow_id).select_related("user").order_by("user_id", "client")
    return [{"client": row.client, "user": row.user_id, "name": display_name(row.user),
             "initials": initials(row.user), "colour": _colour(row.user_id), "node": row.node or None}
            for row in rows]


def _marks(workflow_id: int) -> tuple[int, str, int]:
    """What a waiting feed watches: the draft's revision, who is there (and where), the latest version."""
    revision = Workflow.objects.filter(pk=workflow_id).values_list("revision", flat=True).first() or 0
    seen = _live(workflow_id).aggregate(count=Count("pk"), changed=Max("changed_at"))
    token = f"{seen['count']}-{seen['changed'].timestamp() if seen['changed'] else 0}"
    version = WorkflowVersion.objects.filter(workflow_id=workflow_id).aggregate(n=Max("number"))["n"] or 0
    return revision, token, version


def _int(value: str | None, field: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise BadRequest(f"{field} is a whole number", field=field) from None


def _version(workflow_id: int) -> dict[str, Any] | None:
    latest = (WorkflowVersion.objects.filter(workflow_id=workflow_id).select_related("published_by")
              .order_by("-number").first())
    if latest is None:
        return None
    return {"number": latest.number, "by": display_name(latest.published_by), "user": latest.published_by_id}


def feed_answer(workflow: Workflow, after: int) -> dict[str, Any]:
    """The changes after revision ``after`` (oldest first), who is there and the latest published version."""
    rows = list(DraftOperation.objects.filter(workflow_id=workflow.pk, revision__gt=after)
                .select_related("actor").order_by("revision")[:MAX_ENTRIES])
    revision, token, _ = _marks(workflow.pk)
    complete = bool(rows) and rows[0].revision == after + 1 and rows[-1].revision == revision \
        and len(rows) == revision - after
    return {
        "revision": revision,
        # A gap (pruned log, too many changes) means: reload the draft rather than follow changes.
        "resync": revision > after and not complete,
        "entries": [{"revision": row.revision, "client": row.client, "user": row.actor_id,
                     "by": display_name(row.actor), "ops": [op.get("op") for op in row.ops]} for row in rows],
        "presence": presence(workflow.pk),
        "presence_token": token,
        "version": _version(workflow.pk),
    }


@never_cache
@signed_in("GET")
def feed(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    """``?after=<revision>&presence=<token>&version=<n>``: answers once anything differs from what the tab
    knows, or after the wait with nothing new."""
    workflow = workflow_selectors.get_workflow(user=request.user, workflow_id=workflow_id)
    require_workflow_role(request.user, workflow, "viewer")
    try:
        after = _int(request.GET.get("after"), "after")
        known_version = _int(request.GET.get("version"), "version")
    except BadRequest as exc:
        return JsonResponse(exc.to_dict(), status=400)
    known_presence = request.GET.get("presence", "")
    if after is None:
        after = workflow.revision
    wait = trellis.LIVE_WAIT_SECONDS
    if wait and _waiting.acquire(blocking=False):
        try:
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                revision, token, version = _marks(workflow.pk)
                if revision != after or token != known_presence or \
                        (known_version is not None and version != known_version):
                    break
                time.sleep(TICK)
        finally:
            _waiting.release()
    return JsonResponse(feed_answer(workflow, after))


@signed_in("POST")
def announce(request: HtmxHttpRequest, workflow_id: int) -> HttpResponse:
    """The tab's presence: ``{"client", "node"}`` (the selected node or null), ``"leave": true`` on closing."""
    workflow = workflow_selectors.get_workflow(user=request.user, workflow_id=workflow_id)
    try:
        body = form_json(request.body.decode("utf-8", "replace"), field=None, what="the request body")
        if not isinstance(body, dict):
            raise BadRequest('send {"client": "<tab id>", "node": "<selected node or null>"}')
        node = body.get("node")
        set_presence(actor=request.user, workflow=workflow, client=client_id(body.get("client")),
                     node=node if isinstance(node, str) else "", leave=body.get("leave") is True)
    except BadRequest as exc:
        return JsonResponse(exc.to_dict(), status=400)
    return HttpResponse(status=204)
