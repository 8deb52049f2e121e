"""Where a worker's CPU goes per one-step run (issue 33): ``bench_small_runs``'s runs, queued first, then taken by
``run_worker --batch --slots 1`` in this process under cProfile. Prints the functions with the most cumulative
and own time, per run. A fresh SQLite database, or the one ``DATABASE_URL`` names (``.ci/postgres.sh``).

    .venv/bin/python -m bench.profile_small_runs
    TRELLIS_PROFILE_RUNS=200 .ci/postgres.sh .venv/bin/python -m bench.profile_small_runs

``TRELLIS_PROFILE_CLOCK=cpu`` times functions by this process's CPU time instead of the wall clock: the wall
clock counts a round trip's wait for the database as the time of the call that waits, which hides where the
worker's own CPU goes (on 2 cores the database and the API want it too).
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import tempfile
import time

from bench import _workloads as w

RUNS = int(os.environ.get("TRELLIS_PROFILE_RUNS", "200"))


def main() -> None:
    if "DATABASE_URL" not in os.environ:
        tmp = tempfile.mkdtemp(prefix="trellis-profile-")
        os.environ["DATABASE_URL"] = f"sqlite:///{tmp}/profile.sqlite3"
    os.environ.update(w.leg_env())
    user, team = w.setup_leg()
    from django.core.management import call_command

    from designer.models import Run
    from designer.runs import services as run_services
    from designer.workflows import services as workflow_services

    workflow = workflow_services.create_workflow(actor=user, team=team, name="One", document=w.one_math_step_document())
    for _ in range(RUNS):
        run_services.start_run(actor=user, workflow=workflow)
    call_command("run_worker", batch=True, slots=1, startup_delay=False, reload=False, max_tasks=5, verbosity=0)
    profile = cProfile.Profile(time.process_time) if os.environ.get("TRELLIS_PROFILE_CLOCK") == "cpu" \
        else cProfile.Profile()
    began, cpu = time.perf_counter(), time.process_time()
    profile.enable()
    call_command("run_worker", batch=True, slots=1, startup_delay=False, reload=False, verbosity=0)
    profile.disable()
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    done = Run.objects.filter(status="completed").count()
    print(f"{done} runs completed; {1000 * wall / RUNS:.2f} ms wall, {1000 * cpu / RUNS:.2f} ms CPU a run "
          f"(profiled); load {os.getloadavg()[0]:.1f}")
    out = os.environ.get("TRELLIS_PROFILE_OUT")
    if out:
        profile.dump_stats(out)
    stats = pstats.Stats(profile, stream=sys.stdout)
    stats.sort_stats("cumulative").print_stats(60)
    stats.sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
