"""The periodic thread behind the lease heartbeat and the cancel watch (``designer.core.periodic``)."""

from __future__ import annotations

import logging
import threading

import pytest

from designer.runs.lease import Heartbeat, LeaseLost


def test_a_heartbeat_renews_until_its_lease_is_lost_and_survives_a_failed_renewal(
        caplog: pytest.LogCaptureFixture) -> None:
    calls: list[tuple[int, str]] = []
    stopped = threading.Event()

    def renewer(run_id: int, owner: str) -> None:
        calls.append((run_id, owner))
        if len(calls) == 2:
            raise RuntimeError("database is locked")
        if len(calls) == 4:
            stopped.set()
            raise LeaseLost("gone")

    with caplog.at_level(logging.WARNING, logger="designer.runs.lease"):
        with Heartbeat(7, "worker-a", interval=0.01, renewer=renewer) as beat:
            assert stopped.wait(10)
            beat._thread.join(10)  # a lost lease ends the thread by itself, before the block does
            assert not beat._thread.is_alive()
    assert calls == [(7, "worker-a")] * 4  # the failed renewal was tried again; nothing after the lost lease
    failures = [r for r in caplog.records if r.name == "designer.runs.lease"]
    assert [r.getMessage() for r in failures] == ["run 7: lease heartbeat failed; retrying"]
    assert beat._thread.name == "lease-heartbeat-7" and beat._thread.daemon


def test_leaving_the_block_stops_the_thread_and_waits_for_it() -> None:
    ticks: list[int] = []
    with Heartbeat(3, "worker-b", interval=0.01, renewer=lambda run_id, owner: ticks.append(run_id)) as beat:
        while len(ticks) < 2:
            threading.Event().wait(0.01)
    assert not beat._thread.is_alive()
    count = len(ticks)
    threading.Event().wait(0.05)
    assert len(ticks) == count


def test_a_block_that_ends_before_its_first_tick_starts_no_thread() -> None:
    ticks: list[int] = []
    with Heartbeat(5, "worker-c", interval=60, renewer=lambda run_id, owner: ticks.append(run_id)) as beat:
        pass
    with Heartbeat(6, "worker-c", interval=0.01, renewer=lambda run_id, owner: ticks.append(run_id)) as later:
        while not ticks:
            threading.Event().wait(0.01)
    # The short block's thread was never started (no thread per one-step run), and the starter skipped it
    # without holding up the heartbeat queued behind it.
    assert beat._thread.ident is None and ticks[0] == 6
    assert later._thread.ident is not None and not later._thread.is_alive()
