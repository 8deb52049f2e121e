"""Starting a server process on loopback: a free port, and waiting until it listens (tests and benchmarks)."""

from __future__ import annotations

import socket
import subprocess
import time
from typing import Any


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def listening(port: int, process: subprocess.Popen[Any], *, seconds: float = 60) -> bool:
    """Whether 127.0.0.1:``port`` accepts a connection before ``process`` exits and ``seconds`` pass; the
    deadline only guards against a hang."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(0.1)
