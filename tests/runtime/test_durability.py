"""Durability modes of the runtime checkpointers: batched group commit keeps its guarantees.

The process test kills a batched run (and a synced run on a padded log) with SIGKILL mid-way and resumes it: the
output, the stored state and the stored trace equal a clean run's, no checkpoint that was durable before the kill
is lost, and at most the in-flight supersteps run again. The padded log's tests tear its last record the ways a
power cut can (the disk keeps some of its blocks) and check that it is ignored and written over.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from runtime import Engine, RunState
from runtime.checkpoint import FileCheckpointer, SqliteCheckpointer
from runtime.engine import EngineOptions
from runtime.errors import CheckpointWriteError, CorruptRunStateError
from runtime.state import SequentialIds
from runtime.testing.checkpointer_conformance import sample_events, sample_run_state
from tests.runtime import durability_child as child
from tests.runtime.test_checkpoint import TestFileCheckpointer, TestSqliteCheckpointer

REPO = Path(__file__).resolve().parents[2]


class TestBatchedSqliteCheckpointer(TestSqliteCheckpointer):
    def make_checkpointer(self) -> SqliteCheckpointer:
        checkpointer = SqliteCheckpointer(self.directory / f"batched{len(self.opened)}.sqlite3",
                                          durability="batched", max_pending=4)
        self.opened.append(checkpointer)
        return checkpointer


class TestBatchedFileCheckpointer(TestFileCheckpointer):
    def make_checkpointer(self) -> FileCheckpointer:
        return FileCheckpointer(self.directory, durability="batched", max_pending=4)


def _batched(kind: str, directory: Path, **options: Any) -> SqliteCheckpointer | FileCheckpointer:
    if kind == "file-sync":
        return FileCheckpointer(directory / "logs", durability="sync", preallocate=child.PADDING, **options)
    if kind == "sqlite":
        return SqliteCheckpointer(directory / "runs.sqlite3", durability="batched", **options)
    return FileCheckpointer(directory / "logs", durability="batched", **options)


def _running(step: int) -> RunState:
    state = sample_run_state(step=step)
    state.status = "running"
    return state


@pytest.mark.parametrize("kind", ["sqlite", "file"])
def test_saves_queued_behind_a_busy_writer_are_committed_together(tmp_path: Path, kind: str) -> None:
    cp = _batched(kind, tmp_path)
    cp.save(_running(0))
    cp.flush()
    writer = cp._writer
    assert writer is not None
    before = writer.batches
    with cp._lock:  # the writer cannot commit meanwhile: the next saves queue up behind it
        for step in range(1, 11):
            cp.save(_running(step))
        assert cp.in_flight() == 10
    cp.flush()
    assert cp.in_flight() == 0
    assert writer.records == 11
    assert writer.batches - before <= 2  # one batch it had taken before the lock, one for all the rest
    assert cp.load("run_0000000000001").step == 10


@pytest.mark.parametrize("kind", ["sqlite", "file"])
def test_a_stopped_run_is_durable_when_save_returns_and_the_queue_is_bounded(tmp_path: Path, kind: str) -> None:
    cp = _batched(kind, tmp_path, max_pending=3)
    cp.save(_running(0))
    cp.flush()
    blocked = threading.Event()
    done = threading.Event()

    def save_five() -> None:
        for step in range(1, 6):
            if step == 4:
                blocked.set()
            cp.save(_running(step))
        done.set()

    with cp._lock:
        worker = threading.Thread(target=save_five)
        worker.start()
        assert blocked.wait(10)
        # The fourth save waits for the writer: never more than max_pending saves in flight.
        assert not done.wait(0.3)
        assert cp.in_flight() == 3
    worker.join(10)
    assert done.is_set()
    stopped = sample_run_state(step=6)  # status "interrupted": the run stops here
    cp.save(stopped)
    assert cp.in_flight() == 0
    assert cp.load(stopped.run_id).step == 6


def test_a_background_write_that_fails_is_raised_by_every_later_call(tmp_path: Path) -> None:
    cp = FileCheckpointer(tmp_path, durability="batched")
    cp.save(_running(0))
    cp.flush()
    log = cp.log_path("run_0000000000001")
    log.unlink()
    log.mkdir()  # the next append cannot open the log
    cp.save(_running(1))
    with pytest.raises(CheckpointWriteError) as caught:
        cp.flush()
    assert caught.value.code == "checkpoint.write_failed"
    with pytest.raises(CheckpointWriteError):
        cp.save(_running(2))


def test_durability_names_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="durability 'fast'"):
        SqliteCheckpointer(":memory:", durability="fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_pending"):
        FileCheckpointer(tmp_path, durability="batched", max_pending=0)


def _clean_run(kind: str, directory: Path, limit: int) -> tuple[Any, list[Any], RunState]:
    cp = _batched(kind, directory)
    engine = Engine(registry=child.registry(None, None), options=EngineOptions(checkpointer=cp, ids=SequentialIds()))
    result = engine.run(child.workflow(limit), None, run_id="victim")
    assert result.status == "completed"
    return result.output, [e.identity() for e in cp.load_events("victim")], cp.load("victim")


@pytest.mark.parametrize("kind", ["sqlite", "file", "file-sync"])
def test_a_run_killed_mid_way_resumes_to_a_clean_runs_end(tmp_path: Path, kind: str) -> None:
    limit = 600
    side = tmp_path / "executed.txt"
    directory = tmp_path / "crash"
    victim = subprocess.Popen([sys.executable, "-m", "tests.runtime.durability_child", kind, str(directory),
                               str(limit), str(side)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        deadline = time.monotonic() + 120
        while not side.exists() or len(side.read_text().splitlines()) < 200:
            assert victim.poll() is None, victim.stderr.read() if victim.stderr else ""
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.01)
    finally:
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)
    assert victim.returncode == -signal.SIGKILL

    executed = [tuple(int(n) for n in line.split()) for line in side.read_text().splitlines() if line.count(" ") == 1]
    cp = _batched(kind, directory)
    killed_at = cp.load("victim")
    stored_x = killed_at.root_scope.state["x"]
    assert killed_at.status == "running" and stored_x < limit
    # Nothing durable is lost: when the task saw x with f saves in flight, the state with x - f was on disk.
    assert stored_x >= max(x - in_flight for x, in_flight in executed)
    # At most the in-flight supersteps run again: those the process computed past the stored state. The stored
    # state can also be one ahead of the last line: the task that saw ``last`` returned last + 1, and that save
    # reached the disk before the next task wrote its line (seen in CI: last 204, stored 205).
    last = max(x for x, _ in executed)
    assert -1 <= last - stored_x <= child.MAX_PENDING

    engine = Engine(registry=child.registry(None, None), options=EngineOptions(checkpointer=cp, ids=SequentialIds()))
    resumed = engine.continue_run(killed_at, workflow=child.workflow(limit))
    assert resumed.status == "completed"
    output, events, final = _clean_run(kind, tmp_path / "clean", limit)
    assert resumed.output == output == {"x": limit}
    assert cp.load("victim").model_dump(mode="json") == final.model_dump(mode="json")
    assert [e.identity() for e in cp.load_events("victim")] == events


@pytest.mark.parametrize("kind", ["sqlite", "file"])
def test_a_superstep_the_hook_reported_done_survives_a_kill_right_after_the_report(tmp_path: Path, kind: str) -> None:
    """Group commit keeps "every step checkpointed" as seen from outside: the ``on_superstep`` hook hears of a
    superstep only once it is on disk. The child's writer holds each batch until this test answers, and the test
    answers only once the engine waits for the disk, so a hook called before the write reports a superstep that
    the kill then loses (this test fails with the hook called right after ``save``)."""
    directory = tmp_path / "reported"
    victim = subprocess.Popen([sys.executable, "-m", "tests.runtime.durability_child", "reported", kind,
                               str(directory)], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert victim.stdin is not None and victim.stdout is not None
    reported = None
    writing = waiting = False
    try:
        for line in victim.stdout:
            word, *rest = line.split() or [""]
            if word == "done":
                reported = (int(rest[0]), int(rest[1]))
                break
            writing = writing or word == "writing"
            waiting = waiting or word == "waiting"
            if writing and waiting:
                writing = waiting = False
                victim.stdin.write("go\n")
                victim.stdin.flush()
    finally:
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)
    assert reported is not None, victim.stderr.read() if victim.stderr else ""

    stored = _batched(kind, directory).load("victim")
    assert (stored.status, stored.step, stored.root_scope.state["x"]) == ("running", *reported)


def test_the_hook_hears_of_a_batched_superstep_only_after_its_bytes_are_synced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fsync half of the same promise, in one process: when the hook runs, the log has been fdatasynced at
    its whole length. The writer waits for the engine to wait for the disk, so a hook that did not wait would
    find nothing written."""
    synced: list[int] = []

    def recorded_sync(fd: int) -> None:
        os.fdatasync(fd)
        synced.append(os.fstat(fd).st_size)

    monkeypatch.setattr("runtime._checkpoint.sync_file", recorded_sync)
    waits = threading.Condition()
    # Times the engine waited for the disk (or a hook ran), how many of them the writer used, and whether the
    # run's last save (which waits in the save itself) lets every batch go.
    told = [0, 0, 0]

    def engine_waits(last: bool = False) -> None:
        with waits:
            told[0] += 1
            told[2] |= last
            waits.notify_all()

    class Held(FileCheckpointer):
        def _write(self, lines: list[Any]) -> None:
            with waits:
                waits.wait_for(lambda: told[1] < told[0] or told[2])
                told[1] = told[0]
            super()._write(lines)

        def flush(self) -> None:
            engine_waits()
            super().flush()

        def _commit(self, run_state: RunState, *args: Any) -> None:
            if run_state.status != "running":
                engine_waits(last=True)
            super()._commit(run_state, *args)

    cp = Held(tmp_path / "logs", durability="batched", max_pending=4)
    heard: list[tuple[int, int, int]] = []

    def report(run_state: RunState, _events: Any) -> None:
        size = cp.log_path("victim").stat().st_size if cp.log_path("victim").exists() else 0
        heard.append((run_state.step, size, synced[-1] if synced else 0))
        engine_waits()  # lets a writer held by a hook that did not wait go on, so a failing test ends

    engine = Engine(registry=child.registry(None, None),
                    options=EngineOptions(checkpointer=cp, ids=SequentialIds(), on_superstep=report))
    assert engine.run(child.workflow(20), None, run_id="victim").status == "completed"
    cp.close()
    assert [step for step, _, _ in heard] == list(range(21))
    assert all(size > 0 and synced_size == size for _, size, synced_size in heard), heard


def test_the_async_driver_also_reports_a_batched_superstep_only_once_it_is_on_disk(tmp_path: Path) -> None:
    """``Engine.arun`` waits for the writer (off the event loop) before its hook, as the sync driver does. The
    writer holds its first batch until someone waits for the disk, so a hook that did not wait would find that
    superstep still in flight."""
    someone_waits = threading.Event()

    class Held(FileCheckpointer):
        def _write(self, lines: list[Any]) -> None:
            someone_waits.wait()
            super()._write(lines)

        def flush(self) -> None:
            someone_waits.set()
            super().flush()

        def _commit(self, run_state: RunState, *args: Any) -> None:
            if run_state.status != "running":
                someone_waits.set()
            super()._commit(run_state, *args)

    cp = Held(tmp_path / "logs", durability="batched", max_pending=4)
    in_flight: list[int] = []

    async def report(_run_state: RunState, _events: Any) -> None:
        in_flight.append(cp.in_flight())
        someone_waits.set()  # a failing run still ends

    engine = Engine(registry=child.registry(None, None),
                    options=EngineOptions(checkpointer=cp, ids=SequentialIds(), on_superstep=report))
    result = asyncio.run(engine.arun(child.workflow(5), None, run_id="victim"))
    cp.close()
    assert result.status == "completed"
    assert in_flight == [0] * 6


def _whole_records(data: bytes) -> bytes:
    """The records of a padded log: up to its last newline (padding and a torn line after it are not records)."""
    return data[: data.rstrip(b"\0").rfind(b"\n") + 1]


def test_a_synced_log_is_padded_so_a_save_overwrites_blocks_the_file_has(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``"sync"`` a save's fdatasync should not have to commit the file system's journal: the log ends in
    written zeros, a save overwrites them, and the file grows only when a save reaches its end. When the run
    stops the log is cut back to its records."""
    grew: list[bool] = []
    sizes = [0]

    def recorded_sync(fd: int) -> None:
        os.fdatasync(fd)
        size = os.fstat(fd).st_size
        grew.append(size != sizes[-1])
        sizes.append(size)

    monkeypatch.setattr("runtime._checkpoint.sync_file", recorded_sync)
    cp = FileCheckpointer(tmp_path / "logs", durability="sync", preallocate=16_384)
    seen: list[tuple[int, bytes]] = []

    def report(run_state: RunState, _events: Any) -> None:
        data = cp.log_path("victim").read_bytes()
        seen.append((len(data), _whole_records(data)))

    engine = Engine(registry=child.registry(None, None),
                    options=EngineOptions(checkpointer=cp, ids=SequentialIds(), on_superstep=report))
    assert engine.run(child.workflow(60), None, run_id="victim").status == "completed"
    assert len(grew) == 61
    # The first save creates the padding; then only a save that reaches the end extends it.
    assert grew[0] and sum(grew) <= len(grew) // 4, grew
    assert all(size % 4096 == 0 and size > len(records) for size, records in seen[:-1]), seen
    assert [records.count(b"\n") for _, records in seen] == list(range(1, 62))
    final = cp.log_path("victim").read_bytes()
    assert final == _whole_records(final) and final.endswith(b"\n")
    assert FileCheckpointer(tmp_path / "logs").load("victim").root_scope.state["x"] == 60


def test_batched_and_unsynced_logs_are_not_padded(tmp_path: Path) -> None:
    for mode in ("batched", "off"):
        cp = FileCheckpointer(tmp_path / mode, durability=mode)  # type: ignore[arg-type]  # both are modes
        state = _running(1)
        cp.save(state)
        cp.flush()
        data = cp.log_path(state.run_id).read_bytes()
        assert data == _whole_records(data), mode
        cp.close()


#: How a crash can tear the record a synced save was writing into the padding: which of its bytes reached the
#: disk (the rest are still the padding's zeros). Blocks persist in any order, so its newline may be there and
#: its start not.
TEARS = {
    "its end lost": lambda n: range(n // 2, n),
    "its start lost": lambda n: range(0, n // 2),
    "a hole in it": lambda n: range(n // 3, 2 * n // 3),
    "its newline lost": lambda n: range(n - 1, n),
    "all of it lost": lambda n: range(0, n),
}


@pytest.mark.parametrize("tear", TEARS)
def test_a_record_torn_in_the_padding_is_ignored_and_the_next_save_writes_over_it(tmp_path: Path,
                                                                                     tear: str) -> None:
    directory = tmp_path / "logs"
    cp = FileCheckpointer(directory, durability="sync")
    state = _running(0)
    ends = []
    for step in range(6):
        state.step, state.trace_seq = step, step + 1
        state.root_scope.state["seen"] = list(range(step))
        cp.save(state, sample_events(state.run_id, step, 1))
        ends.append(len(_whole_records(cp.log_path(state.run_id).read_bytes())))
    path = cp.log_path(state.run_id)
    data = bytearray(path.read_bytes())
    assert len(data) > ends[-1]  # padded
    start = ends[-2]
    for offset in TEARS[tear](ends[-1] - start):
        data[start + offset] = 0
    path.write_bytes(bytes(data))

    for reader in (FileCheckpointer(directory), FileCheckpointer(directory, durability="sync")):
        assert reader.load(state.run_id).step == 4
        assert [e.seq for e in reader.load_events(state.run_id)] == list(range(5))
    again = FileCheckpointer(directory, durability="sync", preallocate=64)
    assert path.stat().st_size == len(data)  # opening alone writes nothing
    for step in (5, 6):
        state.step, state.trace_seq = step, step + 1
        state.root_scope.state["seen"] = list(range(step))
        again.save(state, sample_events(state.run_id, step, 1))
    reread = FileCheckpointer(directory)
    assert reread.load(state.run_id).root_scope.state["seen"] == list(range(6))
    assert [e.seq for e in reread.load_events(state.run_id)] == list(range(7))
    assert b"\0" not in _whole_records(path.read_bytes())


def test_a_zero_byte_before_the_last_record_is_damage_not_a_torn_write(tmp_path: Path) -> None:
    """Only the last record can be torn (each synced save is written after the one before is on disk)."""
    cp = FileCheckpointer(tmp_path, durability="sync")
    state = _running(0)
    for step in range(4):
        state.step = step
        cp.save(state)
    path = cp.log_path(state.run_id)
    data = bytearray(path.read_bytes())
    lines = _whole_records(bytes(data)).split(b"\n")
    data[len(lines[0]) + 5] = 0  # inside the second record
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptRunStateError):
        FileCheckpointer(tmp_path).load_events(state.run_id)


def _bytes_dirtied() -> int:
    """Bytes this process has dirtied in the page cache (what writeback sends to the disk for it)."""
    fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return int(fields["write_bytes"])


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux's per-process I/O counters")
def test_a_save_over_the_padding_dirties_only_the_pages_it_writes(tmp_path: Path) -> None:
    """The padding is written a page at a time: one large write of zeros is cached as one large folio, and each
    save that overwrote a few bytes of it dirtied (and its sync wrote) the whole of it (1 MiB a save, seen on
    Linux 6.18)."""
    cp = FileCheckpointer(tmp_path, durability="sync", preallocate=1 << 20)
    state = _running(0)
    cp.save(state)  # creates the padding
    before = _bytes_dirtied()
    for step in range(1, 41):
        state.step = step
        cp.save(state)
    per_save = (_bytes_dirtied() - before) / 40
    assert per_save <= 4 * 4096, per_save
