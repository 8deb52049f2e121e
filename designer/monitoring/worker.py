"""What ``run_worker`` does for the operator while it works: its heartbeat row (``/readyz``, ``/metrics``) and,
with ``TRELLIS_WORKER_METRICS_PORT`` set, its own Prometheus metrics on 127.0.0.1 (never another address: the
figures are not protected; a Prometheus on the same host, or a sidecar, scrapes them)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import start_http_server

from designer.conf import trellis
from designer.monitoring.heartbeat import beating
from designer.monitoring.metrics import WORKER_REGISTRY

logger = logging.getLogger("designer.monitoring")

#: The only address the worker's metrics are served on.
METRICS_ADDRESS = "127.0.0.1"


@contextmanager
def watched(worker_id: str) -> Iterator[None]:
    """While the block runs the worker's heartbeat is kept fresh and its metrics served (when configured)."""
    port = trellis.WORKER_METRICS_PORT
    server = None
    if port is not None:
        server, _thread = start_http_server(port, addr=METRICS_ADDRESS, registry=WORKER_REGISTRY)
        logger.info("worker %s: metrics on http://%s:%d/metrics", worker_id, METRICS_ADDRESS, port)
    try:
        with beating(worker_id):
            yield
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
