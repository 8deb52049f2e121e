"""Gunicorn's settings for ``manage.py serve`` (``make run``) and for deployments that want the same.

Django's development server listens with a backlog of 5 connections, so a burst of callers (50 run starts at
once, a webhook sender retrying in parallel) saw connections reset with no run and no error. Here the kernel
queues up to ``backlog`` connections while threaded workers answer them. Its Trellis settings (threads, backlog,
timeout) are declared in ``designer.conf`` and read from the environment (``WEB_CONCURRENCY`` is gunicorn's own
name for the worker count); gunicorn's command line overrides any of them.
"""

from __future__ import annotations

import os

from designer.conf import TrellisSettings, environ_value

#: Processes: one per core of the 2-core machines we size for; requests are mostly database-bound.
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
#: Threads per process (gthread): a request waiting on SQLite's write lock or PostgreSQL does not hold a core.
threads = environ_value(TrellisSettings.WEB_THREADS, os.environ)
worker_class = "gthread"
#: Connections the kernel holds while every thread is busy; a burst beyond the threads waits instead of resetting.
backlog = environ_value(TrellisSettings.WEB_BACKLOG, os.environ)
#: A request may wait up to SQLite's 20 s busy timeout for the write lock; the worker is restarted only past this.
timeout = environ_value(TrellisSettings.WEB_TIMEOUT, os.environ)
graceful_timeout = 10
accesslog = "-"
errorlog = "-"
