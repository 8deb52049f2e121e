"""Where a worker's time goes per item of a collected foreach (issue 33): ``bench_worker_items``'s run executed by
``designer.runs.executor.execute`` in this process, on a fresh SQLite database (or the one ``DATABASE_URL`` names,
e.g. under ``.ci/postgres.sh``).

The executor is what a ``run_worker`` slot calls for the run; only the task queue around it is left out. The
report is the worker's CPU time per item by part (the CPU of the thread, which a busy machine inflates far less
than wall time), measured by timing the few functions that make each part (cheap next to what they do, unlike a
profiler, which inflates Python code and not the database's C): the claim, the engine's own work (the process's
CPU less the parts), the steps, the checkpoint's delta and encoding, the save's statements, the commit, the
superstep observers (metrics) and the outcome. A save writes either in one statement (PostgreSQL, when it stores
no parts and keeps every checkpoint: ``OrmCheckpointer._save_in_one_statement``, the run's row, its kept
checkpoint and its events together) or in several (the fallback: the run row's UPDATE, ``_update_run``; the
kept checkpoint and parts; the trace events); each is timed, with how many saves took it. With
``TRELLIS_PROFILE_CPROFILE=1`` the same run is also profiled and the functions with the most own time are listed.
``TRELLIS_PROFILE_CLOCK=wall`` times the parts by the wall clock instead (waits for the disk or the database
server show then).

    .venv/bin/python -m bench.profile_worker_items                 # 10,000 items, SQLite
    TRELLIS_PROFILE_ITEMS=2000 .venv/bin/python -m bench.profile_worker_items
    .ci/postgres.sh .venv/bin/python -m bench.profile_worker_items  # PostgreSQL

``TRELLIS_PROFILE_OUT=<file>`` keeps the raw cProfile profile (``pstats`` format).
"""

from __future__ import annotations

import cProfile
import functools
import os
import pstats
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bench import _workloads as w

ITEMS = int(os.environ.get("TRELLIS_PROFILE_ITEMS", "10000"))
CONCURRENCY = int(os.environ.get("BENCH_WORKER_ITEMS_CONCURRENCY", "16"))
SHOWN = 30
#: ``cpu`` (the calling thread's CPU) or ``wall``: what the parts are timed by.
CLOCK = os.environ.get("TRELLIS_PROFILE_CLOCK", "cpu")


class Timers:
    """CPU seconds (of the calling thread: what waiting for a core on a busy machine does not inflate) and calls per
    part, from wrappers put around the functions that make each part."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, name: str, part: str) -> None:
        original = getattr(owner, name)
        seconds, calls = self.seconds, self.calls
        clock = time.perf_counter if CLOCK == "wall" else time.thread_time

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            began = clock()
            try:
                return original(*args, **kwargs)
            finally:
                seconds[part] += clock() - began
                calls[part] += 1

        setattr(owner, name, timed)
        self._undo.append(lambda: setattr(owner, name, original))

    @contextmanager
    def installed(self) -> Iterator[None]:
        from django.db.backends.base.base import BaseDatabaseWrapper

        from designer.runs import checkpointer, executor, steps
        from runtime import RunState

        self.wrap(executor, "claim", "claim")
        self.wrap(executor.Execution, "finish", "outcome")
        self.wrap(executor.Execution, "_on_superstep", "observers")
        self.wrap(steps.StepProcessPool, "run_step", "steps")
        self.wrap(checkpointer.OrmCheckpointer, "save", "save")
        self.wrap(RunState, "checkpoint_delta", "save: delta")
        self.wrap(checkpointer, "progress_of", "save: progress")
        self.wrap(checkpointer.OrmCheckpointer, "_save_in_one_statement", "save: one statement")
        self.wrap(checkpointer.OrmCheckpointer, "_update_run", "save: run row")
        self.wrap(checkpointer.OrmCheckpointer, "_store_parts", "save: parts + kept checkpoint")
        self.wrap(checkpointer, "append_events", "save: events")
        self.wrap(BaseDatabaseWrapper, "commit", "commit")
        try:
            yield
        finally:
            for undo in reversed(self._undo):
                undo()

    def report(self, items: int, cpu: float) -> None:
        """``cpu``: the run's seconds on ``CLOCK`` (the process's CPU, or the wall time); what the parts do not
        account for is the engine's."""
        s = self.seconds
        save_rest = s["save"] - sum(value for key, value in s.items() if key.startswith("save: ")) - s["commit"]
        rows = [
            ("claim", s["claim"]),
            ("engine (the rest)", cpu - s["claim"] - s["steps"] - s["save"] - s["observers"] - s["outcome"]),
            ("steps (in the worker or a process)", s["steps"]),
            ("checkpoint: delta", s["save: delta"]),
            ("checkpoint: progress counters", s["save: progress"]),
            ("checkpoint: encode + rest of save", save_rest),
            ("checkpoint: one statement (row+kept+events)", s["save: one statement"]),
            ("checkpoint: run row UPDATE", s["save: run row"]),
            ("checkpoint: kept checkpoint + parts", s["save: parts + kept checkpoint"]),
            ("checkpoint: trace events", s["save: events"]),
            ("checkpoint: commit", s["commit"]),
            ("superstep observers (metrics)", s["observers"]),
            ("outcome (finish)", s["outcome"]),
        ]
        print(f"{'part (' + CLOCK + ')':<44} {'us/item':>8} {'share':>6}")
        for name, seconds in rows:
            print(f"{name:<44} {seconds / items * 1e6:>8.1f} {seconds / cpu:>6.0%}")
        print(f"{'all (execute)':<44} {cpu / items * 1e6:>8.1f}")
        print(f"supersteps checkpointed: {self.calls['save']:,} (in one statement: "
              f"{self.calls['save: one statement']:,}; in several: {self.calls['save: run row']:,}); "
              f"commits: {self.calls['commit']:,}")


def _run() -> None:
    user, team = w.setup_leg()
    from django.db import connection

    from designer.models import Run
    from designer.runs import executor, steps
    from designer.runs import services as run_services
    from designer.workflows import services as workflow_services

    workflow = workflow_services.create_workflow(actor=user, team=team, name="Items",
                                                 document=w.items_foreach("Items", CONCURRENCY))
    steps.shared_pool().warm_up()
    items = list(range(ITEMS))
    # A small run first: imports, the catalogue and the pool are warm when the measured one starts.
    executor.execute(run_services.start_run(actor=user, workflow=workflow, input={"items": items[:50]}).pk)
    profiled = os.environ.get("TRELLIS_PROFILE_CPROFILE") == "1" or bool(os.environ.get("TRELLIS_PROFILE_OUT"))
    profile = cProfile.Profile()
    timers = Timers()
    run = run_services.start_run(actor=user, workflow=workflow, input={"items": items})
    server = w.postmaster()
    server_cpu = w.db_cpu(server)
    with timers.installed():
        began, cpu = time.perf_counter(), time.process_time()
        if profiled:
            profile.enable()
        status = executor.execute(run.pk)
        if profiled:
            profile.disable()
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    server_cpu = w.db_cpu(server) - server_cpu
    done = Run.objects.get(pk=run.pk)
    if status != "completed" or done.output != {"out": [i + 1 for i in items]}:
        raise RuntimeError(f"the profiled run ended {status}: {done.error}")
    print(f"\n{connection.vendor}: {ITEMS:,} items at max_concurrency {CONCURRENCY}: {wall:.2f} s wall, "
          f"{ITEMS / wall:,.0f} items/s, this process's CPU {cpu / ITEMS * 1e6:.0f} us/item"
          f"{' (under cProfile)' if profiled else ''}"
          f"{f', the database server {server_cpu / ITEMS * 1e6:.0f} us/item' if server else ''}; "
          f"{os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}\n")
    timers.report(ITEMS, wall if CLOCK == "wall" else cpu)
    if profiled:
        out = os.environ.get("TRELLIS_PROFILE_OUT")
        if out:
            profile.dump_stats(out)
        print()
        pstats.Stats(profile, stream=sys.stdout).sort_stats("tottime").print_stats(SHOWN)


def main() -> int:
    if os.environ.get("DATABASE_URL"):
        _run()
        return 0
    with tempfile.TemporaryDirectory(prefix="trellis-profile-") as tmp:
        os.environ.update(w.leg_env(DATABASE_URL=f"sqlite:///{tmp}/profile.sqlite3"))
        os.environ.pop("TRELLIS_RUN_MAX_STEPS", None)
        _run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
