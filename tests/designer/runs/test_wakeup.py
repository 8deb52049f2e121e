"""Waking idle worker slots (``designer.runs.wakeup``) on the test database: the wake file on SQLite,
NOTIFY/LISTEN on PostgreSQL."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import pytest
from django.db import connection

from designer.runs import wakeup

pytestmark = pytest.mark.django_db(transaction=True)

#: A poll interval no test waits out: a wait that returns was ended by an announcement.
NEVER = 600.0


def _in_thread(target: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def test_an_announcement_one_slot_hears_still_ends_the_other_slots_next_wait() -> None:
    waiter = wakeup.Waiter()
    try:
        armed = threading.Event()
        announced = threading.Event()

        def busy_slot() -> None:
            # Looks at the queue (arms), finds nothing; the work is announced before it starts waiting.
            waiter.arm()
            armed.set()
            announced.wait()
            waiter.wait(NEVER)

        idle_armed = threading.Event()

        def idle_slot() -> None:
            waiter.arm()
            idle_armed.set()
            waiter.wait(NEVER)

        busy = _in_thread(busy_slot)
        idle = _in_thread(idle_slot)
        assert armed.wait(30) and idle_armed.wait(30)
        wakeup._announce_now()
        announced.set()
        idle.join(60)
        busy.join(60)
        assert not idle.is_alive() and not busy.is_alive()
    finally:
        waiter.close()


def test_a_slot_that_saw_no_announcement_since_it_armed_keeps_waiting() -> None:
    """A slot sleeps through a window in which nothing was announced, and wakes when something is. On PostgreSQL
    the channel is the database's, so another session's announcement (an earlier test's, still on its way) may
    end one wait early, harmlessly: the slot looks at the queue and waits again. So a quiet window is looked for
    among a few, not required of the first."""
    waiter = wakeup.Waiter()
    try:
        slept_through = False
        for _ in range(10):
            waiter.arm()
            started = time.monotonic()
            waiter.wait(0.3)
            if time.monotonic() - started >= 0.3:
                slept_through = True
                break
        assert slept_through
        done = threading.Event()
        armed = threading.Event()

        def slot() -> None:
            waiter.arm()
            armed.set()
            waiter.wait(NEVER)
            done.set()

        thread = _in_thread(slot)
        assert armed.wait(30)
        # The wake file's mtime moves in the kernel's timestamp ticks (a few ms): announce in a later one.
        time.sleep(0.05)
        wakeup._announce_now()
        thread.join(60)
        assert done.is_set()
    finally:
        waiter.close()


def _sqlite_only() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("the wake file is SQLite's; PostgreSQL counts its notifications")


def test_every_announcement_moves_the_wake_file_mark_even_within_one_timestamp_tick() -> None:
    """The file's modification time moves in the kernel's ticks (several ms), so a burst of announcements
    within one tick left it unchanged after the first: the mark is the file's size, one byte per announcement."""
    _sqlite_only()
    waiter = wakeup.Waiter()
    try:
        for _ in range(50):
            before = waiter._mark()
            wakeup._announce_now()
            assert waiter._mark() != before
    finally:
        waiter.close()


def test_an_announcement_in_the_tick_a_slot_armed_in_ends_its_wait() -> None:
    """The race: a slot arms, work is announced in the same timestamp tick, the slot waits. Here the tick is
    made certain by putting the file's times back to those of the arm."""
    _sqlite_only()
    wakeup._announce_now()  # the file exists before the slot arms
    path = wakeup._wake_file()
    assert path is not None
    waiter = wakeup.Waiter()
    try:
        stamp = path.stat()
        waiter.arm()
        wakeup._announce_now()
        os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        assert waiter.wait(30) is True  # False: it slept its whole poll interval with work announced
    finally:
        waiter.close()


def test_a_full_wake_file_is_started_anew_and_the_restart_still_wakes(monkeypatch: pytest.MonkeyPatch) -> None:
    _sqlite_only()
    monkeypatch.setattr(wakeup, "WAKE_FILE_MAX_BYTES", 3)
    waiter = wakeup.Waiter()
    try:
        for _ in range(7):
            waiter.arm()
            wakeup._announce_now()
            assert waiter.wait(30) is True
        path = wakeup._wake_file()
        assert path is not None and path.stat().st_size < 3
        assert [p.name for p in path.parent.glob(f"{path.name}.*")] == []  # no fresh file left behind
        waiter.arm()
        assert waiter.wait(0.05) is False  # and a quiet file does not wake it
    finally:
        waiter.close()


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the wake file is SQLite's")
def test_an_idle_slot_looks_at_the_wake_file_soon_after_it_found_nothing_then_less_often(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A slot that has just caught up with a burst of work hears the burst's next run within a millisecond or two;
    # one idle for longer looks every FILE_POLL_SECONDS, as before.
    pauses: list[float] = []
    sleep = time.sleep

    def recorded(seconds: float) -> None:
        pauses.append(seconds)
        sleep(seconds)

    waiter = wakeup.Waiter()
    try:
        waiter.arm()
        monkeypatch.setattr(wakeup.time, "sleep", recorded)
        assert waiter.wait(0.2) is False
    finally:
        monkeypatch.undo()
        waiter.close()
    assert pauses[:6] == [0.001, 0.002, 0.004, 0.008, 0.016, wakeup.FILE_POLL_SECONDS]
    assert max(pauses) == wakeup.FILE_POLL_SECONDS
