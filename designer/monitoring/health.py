"""``/healthz`` and ``/readyz``: unauthenticated, cheap, JSON, 200 or 503.

``/healthz`` says the process answers and touches nothing else. ``/readyz`` asks three things, each reported
under ``checks`` with a stable ``code`` when it fails: the database answers (``readyz.database``), every
migration is applied (``readyz.migrations``; worked out once per process and remembered once true, since
migrations are never unapplied under a running server), and a worker was seen within
``TRELLIS_WORKER_SEEN_SECONDS`` (``readyz.no_worker``; ``0`` leaves this check out). Errors name the failing
check and the exception's type, never its text: the endpoint is public.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from designer.conf import trellis
from designer.monitoring.models import WorkerHeartbeat

logger = logging.getLogger("designer.monitoring")

_migrated = False
_migrated_lock = threading.Lock()


def _failure(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "code": code, "message": message}


def _database() -> dict[str, Any]:
    try:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:
        logger.warning("readyz: the database did not answer", exc_info=True)
        return _failure("readyz.database", f"the database did not answer ({type(exc).__name__})")
    return {"ok": True}


def migrations_applied() -> bool:
    """Whether no migration is left to apply; once true, remembered for the life of the process."""
    global _migrated
    if _migrated:
        return True
    with _migrated_lock:
        if not _migrated:
            executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
            _migrated = not executor.migration_plan(executor.loader.graph.leaf_nodes())
    return _migrated


def _migrations() -> dict[str, Any]:
    try:
        applied = migrations_applied()
    except Exception as exc:
        logger.warning("readyz: could not compare the migrations", exc_info=True)
        return _failure("readyz.migrations", f"the applied migrations could not be read ({type(exc).__name__})")
    if not applied:
        return _failure("readyz.migrations", "migrations are not all applied: run manage.py migrate")
    return {"ok": True}


def _worker() -> dict[str, Any]:
    window = trellis.WORKER_SEEN_SECONDS
    if window is None:
        return {"ok": True, "skipped": True}
    try:
        seen = WorkerHeartbeat.objects.filter(last_seen__gte=timezone.now() - timedelta(seconds=window)).count()
    except Exception as exc:
        logger.warning("readyz: could not read the workers' heartbeats", exc_info=True)
        return _failure("readyz.no_worker", f"the workers' heartbeats could not be read ({type(exc).__name__})")
    if not seen:
        return _failure("readyz.no_worker", f"no worker (manage.py run_worker) seen in the last {window:g} seconds")
    return {"ok": True, "workers": seen}


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The process is alive and answers."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Ready for traffic: the database answers, migrations are applied, a worker was seen recently."""
    database = _database()
    checks = {"database": database}
    if database["ok"]:
        checks["migrations"] = _migrations()
        checks["worker"] = _worker()
    else:
        skipped = _failure("readyz.database", "not checked: the database did not answer")
        checks["migrations"] = checks["worker"] = skipped
    ready = all(check["ok"] for check in checks.values())
    return JsonResponse({"status": "ready" if ready else "not ready", "checks": checks}, status=200 if ready else 503)
