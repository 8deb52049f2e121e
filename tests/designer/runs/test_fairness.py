"""Fair queues (issue 26): ``run_worker`` picks tasks in weighted round robin across teams and round robin across
a team's workflows, within per-team and per-workflow limits, and keeps a worker's last free slot (and one step
process) for a team that runs nothing else there. The pick is checked on the real queue rows; the worker on a
real ``run_worker`` process, by the order things happened in, never by how long they took."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from django_tasks_db.models import DBTaskResult
from hypothesis import given
from hypothesis import strategies as st

from designer.access import teams as team_services
from designer.models import QueuedTask, Run, Team
from designer.runs import fair_worker, fairness
from designer.runs import services as run_services
from designer.runs.fairness import Load, Policy, Queued, choose
from designer.workflows import services as workflow_services
from runtime import WorkflowBuilder
from tests.conftest import REPO_ROOT
from tests.designer.monitoring.test_metrics import free_port, samples
from tests.designer.runs_support import stop_worker, wait_for


def one_step() -> dict[str, Any]:
    g = WorkflowBuilder("one", "One step")
    g.use("set_value", id="answer", input=[{"target": "value", "value": 42}],
          output=[{"source": ".", "target": "answer"}])
    g.output("answer", "state.answer")
    return g.build().model_dump(mode="json")


def one_task_step() -> dict[str, Any]:
    """One step that runs in a step process (``set_value`` is done by the engine itself)."""
    g = WorkflowBuilder("pid", "Process id")
    g.use("whoami", id="pid", output=[{"source": ".", "target": "pid"}])
    g.output("pid", "state.pid")
    return g.build().model_dump(mode="json")


def idle(**changes: Any) -> Load:
    load = {"team_running": {}, "workflow_running": {}, "served": {}, "floor": 0.0, "last_picked": {},
            "worker_teams": {}, "free_slots": 1, "slots": 1}
    return Load(**{**load, **changes})


# --- the decision -------------------------------------------------------------------------------------------------

def test_the_team_served_least_goes_first_and_the_queue_order_breaks_ties() -> None:
    queued = [Queued(1, 10, 0), Queued(2, 20, 1)]
    assert choose(queued, {}, idle()).team_id == 1
    assert choose(queued, {}, idle(served={1: 1.0})).team_id == 2
    # A team back after a long pause counts from the floor, not from its old pass: it does not take every pick.
    assert choose(queued, {}, idle(served={1: 5.0, 2: 0.0}, floor=5.0)).team_id == 1


def test_limits_and_the_kept_slot_hold_work_back() -> None:
    queued = [Queued(1, 10, 0), Queued(1, 11, 1), Queued(2, 20, 2)]
    capped = {1: Policy(max_running=2)}
    assert choose(queued, capped, idle(team_running={1: 2})).team_id == 2
    per_workflow = {1: Policy(workflow_max_running=1)}
    assert choose(queued, per_workflow, idle(workflow_running={10: 1})) == Queued(1, 11, 1)
    # Last free slot of a two-slot worker: not for team 1, which already runs here.
    assert choose(queued, {}, idle(slots=2, free_slots=1, worker_teams={1: 1})).team_id == 2
    assert choose(queued[:2], {}, idle(slots=2, free_slots=1, worker_teams={1: 1})) is None
    assert choose(queued[:2], {}, idle(slots=2, free_slots=2, worker_teams={1: 1})) is not None


@given(weights=st.lists(st.integers(1, 4), min_size=1, max_size=4), picks=st.integers(10, 60))
def test_picks_follow_the_weights_while_every_team_has_work(weights: list[int], picks: int) -> None:
    """Stride scheduling: over any stretch each team's picks are its weight's share, give or take one."""
    queued = [Queued(team, team * 10, team) for team in range(1, len(weights) + 1)]
    policies = {team: Policy(weight=weight) for team, weight in enumerate(weights, start=1)}
    served: dict[int, float] = {}
    floor = 0.0
    counts: Counter[int] = Counter()
    for _ in range(picks):
        picked = choose(queued, policies, idle(served=served, floor=floor))
        assert picked is not None
        served[picked.team_id], floor = fairness.advance(served.get(picked.team_id, 0.0), floor,
                                                         policies[picked.team_id].weight)
        counts[picked.team_id] += 1
    total = sum(weights)
    for team, weight in enumerate(weights, start=1):
        assert abs(counts[team] - picks * weight / total) <= len(weights), (counts, weights)


# --- the real queue ----------------------------------------------------------------------------------------------

pytestmark_db = pytest.mark.django_db(transaction=True)


@pytest.fixture
def queue(make_user: Any) -> dict[str, Any]:
    """Team A queues three runs of one workflow, then team B one run, then team A one run of another workflow."""
    alice, bob = make_user("alice"), make_user("bob")
    team_a = team_services.create_team(actor=alice, name="Hostile")
    team_b = team_services.create_team(actor=bob, name="Newcomer")
    first = workflow_services.create_workflow(actor=alice, team=team_a, name="Loop", document=one_step())
    second = workflow_services.create_workflow(actor=alice, team=team_a, name="Other", document=one_step())
    theirs = workflow_services.create_workflow(actor=bob, team=team_b, name="One", document=one_step())
    names = {}
    for name, actor, workflow in (("a1", alice, first), ("a2", alice, first), ("a3", alice, first),
                                  ("b", bob, theirs), ("other", alice, second)):
        names[run_services.start_run(actor=alice if actor is alice else bob, workflow=workflow).pk] = name
    return {"names": names, "a": team_a, "b": team_b}


def claims(names: dict[int, str], *, count: int, slots: int = 1,
           worker_teams: Counter[int] | None = None) -> list[str | None]:
    """What ``count`` claims take, by run name (None: nothing may go), skipping the ownerless recovery sweeps."""
    taken: list[str | None] = []
    while len(taken) < count:
        claimed = fairness.claim_next(fairness.ReadyTasks(), worker_id="test", worker_teams=worker_teams or
                                      Counter(), free_slots=1, slots=slots)
        if claimed is not None and claimed.team_id is None:
            continue
        taken.append(None if claimed is None else names[claimed.task.args_kwargs["args"][0]])
    return taken


def ended(run_id: int) -> None:
    next(task for task in DBTaskResult.objects.running() if task.args_kwargs["args"] == [run_id]).set_successful("x")


@pytestmark_db
def test_the_queue_is_taken_round_robin_across_teams_and_workflows(queue: dict[str, Any]) -> None:
    assert QueuedTask.objects.count() == 5  # every enqueued run says whose it is
    # First come, first served would take b fourth, after all of team A's first workflow.
    assert claims(queue["names"], count=6) == ["a1", "b", "other", "a2", "a3", None]


@pytestmark_db
def test_a_heavier_team_gets_more_picks(queue: dict[str, Any]) -> None:
    Team.objects.filter(pk=queue["b"].pk).update(queue_weight=3)
    workflow = queue["b"].workflows.get()
    names = dict(queue["names"])
    for number in (1, 2, 3):
        names[run_services.start_run(actor=workflow.created_by, workflow=workflow).pk] = f"b{number}"
    # B's pass moves a third as far per pick: after a1 and b, B goes twice before A's pass is reached again,
    # and at the tie the team whose work waited longest (A) goes first.
    assert claims(names, count=7) == ["a1", "b", "b1", "b2", "other", "b3", "a2"]


@pytestmark_db
def test_team_and_workflow_limits_hold_across_workers(queue: dict[str, Any], settings: Any) -> None:
    Team.objects.filter(pk=queue["a"].pk).update(max_running=2)
    assert claims(queue["names"], count=4) == ["a1", "b", "other", None]  # A has two running: no third
    a1, a2 = sorted(queue["names"])[:2]
    ended(a1)
    assert claims(queue["names"], count=1) == ["a2"]  # a1 ended: room for one more
    settings.TRELLIS_TEAM_MAX_RUNNING = 1  # the team's own limit (2) still rules
    ended(a2)
    assert claims(queue["names"], count=1) == ["a3"]


@pytestmark_db
def test_a_workflow_limit_lets_the_teams_other_workflow_go(queue: dict[str, Any], settings: Any) -> None:
    settings.TRELLIS_WORKFLOW_MAX_RUNNING = 1
    assert claims(queue["names"], count=4) == ["a1", "b", "other", None]


@pytestmark_db
def test_a_workers_last_free_slot_is_kept_for_another_team(queue: dict[str, Any]) -> None:
    team_a = queue["a"].pk
    assert claims(queue["names"], count=2, slots=2, worker_teams=Counter({team_a: 1})) == ["b", None]


@pytestmark_db
def test_a_slot_held_back_by_the_kept_slot_is_told_so_without_a_claim(queue: dict[str, Any]) -> None:
    """``held_back`` answers what ``claim_next`` would, for the kept slot, with one read and no lock."""
    team_a, team_b = queue["a"].pk, queue["b"].pk
    # Team B's run waits in a queue of its own, the ownerless recovery sweep in another.
    DBTaskResult.objects.filter(fair_key__team_id=team_b).update(queue_name="b")
    DBTaskResult.objects.filter(fair_key__isnull=True).update(queue_name="sweeps")
    only_a = fairness.ReadyTasks(queue_names=("default",))
    every = fairness.ReadyTasks()  # team B's run and the ownerless recovery sweep too
    assert fairness.held_back(only_a, worker_teams=Counter({team_a: 1}), free_slots=1, slots=2)
    assert fairness.held_back(fairness.ReadyTasks(excluded=("b", "sweeps")), worker_teams=Counter({team_a: 1}),
                              free_slots=1, slots=2)
    assert not fairness.held_back(every, worker_teams=Counter({team_a: 1}), free_slots=1, slots=2)
    assert not fairness.held_back(fairness.ReadyTasks(excluded=("b",)), worker_teams=Counter({team_a: 1}),
                                  free_slots=1, slots=2)  # the ownerless sweep may still go
    assert not fairness.held_back(fairness.ReadyTasks(queue_names=("default", "b")),
                                  worker_teams=Counter({team_a: 1}), free_slots=1, slots=2)  # B's run may go
    assert not fairness.held_back(only_a, worker_teams=Counter({team_a: 1}), free_slots=2, slots=2)
    assert not fairness.held_back(only_a, worker_teams=Counter({team_a: 0}), free_slots=1, slots=2)
    assert not fairness.held_back(only_a, worker_teams=Counter(), free_slots=1, slots=1)
    assert fairness.claim_next(only_a, worker_id="test", worker_teams=Counter({team_a: 1}), free_slots=1,
                               slots=2) is None


@pytestmark_db
def test_a_worker_takes_only_the_queues_it_serves(queue: dict[str, Any]) -> None:
    """The pick's SQL filters as db_worker's ``ready()`` does: the worker's queues, less the excluded ones, due."""
    team_b = queue["b"].pk
    DBTaskResult.objects.filter(fair_key__team_id=team_b).update(queue_name="b")
    DBTaskResult.objects.filter(fair_key__isnull=True).delete()  # the recovery sweep: not a run
    a_runs = [pk for pk, name in queue["names"].items() if name != "b"]
    later = DBTaskResult.objects.filter(args_kwargs__args=[a_runs[0]])
    later.update(run_after=timezone.now() + timedelta(hours=1))

    def taken(ready: fairness.ReadyTasks) -> list[str]:
        names = []
        while (claimed := fairness.claim_next(ready, worker_id="test", worker_teams=Counter(), free_slots=1,
                                              slots=1)) is not None:
            names.append(queue["names"][claimed.task.args_kwargs["args"][0]])
            assert DBTaskResult.objects.get(pk=claimed.task.pk).status == "RUNNING"
            assert DBTaskResult.objects.get(pk=claimed.task.pk).worker_ids == ["test"]
        return names

    assert taken(fairness.ReadyTasks(queue_names=("b",))) == ["b"]
    assert taken(fairness.ReadyTasks(backend_name="elsewhere")) == []
    assert sorted(taken(fairness.ReadyTasks(excluded=("b",)))) == ["a2", "a3", "other"]  # a1 is not due yet
    later.update(run_after=timezone.now())
    assert taken(fairness.ReadyTasks()) == ["a1"]


# --- the real worker ---------------------------------------------------------------------------------------------

def snoozing_loop() -> dict[str, Any]:
    """Items four at a time, each a step that blocks its process for ``item`` seconds and logs when it ended."""
    g = WorkflowBuilder("hostile", "Hostile", input_schema={"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "number"}}, "folder": {"type": "string"}},
        "required": ["items", "folder"]})
    each = g.foreach("each", "input.items", max_concurrency=4, results="done")
    nap = g.use("snooze_logged", id="nap", input=[{"target": "seconds", "path": each.item},
                                                  {"target": "folder", "path": "input.folder"}])
    g.chain(each, "loop", nap, "ok", each)
    g.output("done", "state.done")
    return g.build().model_dump(mode="json")


@pytestmark_db
def test_a_newcomers_run_ends_before_a_hostile_loop_lets_go_of_the_worker(
        make_user: Any, worker_env: dict[str, str], settings: Any, tmp_path: Path) -> None:
    """One worker, two slots, four step processes: team A's loop takes a slot and three processes with steps
    that each block for seconds; team B's one-step run, queued after it, takes the other slot and the process
    kept free, and ends before any of A's steps has. (The plain first-come worker runs B after all of A.)"""
    settings.TRELLIS_TASK_MODULES = ["tests.designer.step_tasks"]
    alice, bob = make_user("alice"), make_user("bob")
    hostile_team = team_services.create_team(actor=alice, name="Hostile")
    newcomer_team = team_services.create_team(actor=bob, name="Newcomer")
    hostile = run_services.start_run(actor=alice, workflow=workflow_services.create_workflow(
        actor=alice, team=hostile_team, name="Loop", document=snoozing_loop()),
        input={"items": [3.0] * 6, "folder": str(tmp_path)})
    newcomer = run_services.start_run(actor=bob, workflow=workflow_services.create_workflow(
        actor=bob, team=newcomer_team, name="One", document=one_task_step()))
    result = subprocess.run(
        [sys.executable, "manage.py", "run_worker", "--batch", "--slots", "2", "--interval", "0.1",
         "--no-startup-delay", "--no-reload"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
        env={**worker_env, "TRELLIS_TASK_MODULES": "tests.designer.step_tasks", "TRELLIS_STEP_PROCESSES": "4"})
    assert result.returncode == 0, result.stdout + result.stderr
    hostile.refresh_from_db()
    newcomer.refresh_from_db()
    assert (hostile.status, newcomer.status) == ("completed", "completed"), (hostile.error, newcomer.error)
    ends = sorted(float(line) for line in (tmp_path / "ends").read_text().split())
    assert len(ends) == 6
    assert newcomer.finished_at is not None and newcomer.finished_at.timestamp() < ends[0]


@pytestmark_db
def test_the_worker_recovers_runs_on_a_thread_of_its_own(queue: dict[str, Any], settings: Any) -> None:
    """The queued recovery chain waits for a free slot like any task; ``run_worker``'s sweep thread does not."""
    settings.TRELLIS_RECOVERY_INTERVAL_SECONDS = 0.2
    stale = Run.objects.filter(team=queue["b"]).get()
    DBTaskResult.objects.filter(pk=stale.task_result_id).update(status="RUNNING")  # its worker died with it
    Run.objects.filter(pk=stale.pk).update(status="running", lease_owner="dead",
                                           lease_expires_at=timezone.now() - timedelta(seconds=1))
    with fair_worker.RecoverySweep("test"):
        deadline = time.monotonic() + 30
        while Run.objects.get(pk=stale.pk).task_result_id == stale.task_result_id and time.monotonic() < deadline:
            time.sleep(0.1)
    again = Run.objects.get(pk=stale.pk)
    assert again.task_result_id != stale.task_result_id and again.lease_owner == ""
    assert DBTaskResult.objects.get(pk=stale.task_result_id).status == "FAILED"  # the dead worker's task, closed
    assert QueuedTask.objects.filter(task_id=again.task_result_id, team=queue["b"]).exists()


def worker_metrics(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The worker's own metrics, empty while its server is not up yet."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:
            return samples(answer.read().decode())
    except OSError:
        return {}


@pytestmark_db
def test_an_idle_worker_is_woken_by_new_work_not_by_its_poll(make_user: Any, worker_env: dict[str, str]) -> None:
    """With a poll interval of ten minutes, only the announcement of the enqueue (NOTIFY on PostgreSQL, the wake
    file beside an SQLite database) can get the runs taken while the test waits; the worker's own metrics say
    which ended its slots' waits."""
    owner = make_user("wendy")
    team = team_services.create_team(actor=owner, name="Woken")
    workflow = workflow_services.create_workflow(actor=owner, team=team, name="One", document=one_step())
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "run_worker", "--interval", "600", "--no-startup-delay", "--no-reload"],
        cwd=REPO_ROOT, env={**worker_env, "TRELLIS_WORKER_METRICS_PORT": str(port)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # Idle first: both slots wait (after the recovery sweep it queued at start-up) before any run exists.
        wait_for(lambda: worker_metrics(port).get(("trellis_worker_slots_waiting", ())) == 2,
                 message="both slots idle", worker=process)
        before = worker_metrics(port).get(("trellis_worker_wakeups_total", (("cause", "announced"),)), 0)
        runs = [run_services.start_run(actor=owner, workflow=workflow) for _ in range(3)]
        wait_for(lambda: Run.objects.filter(pk__in=[run.pk for run in runs], status="completed").count() == 3,
                 timeout=120, message="the runs to complete", worker=process)
        found = worker_metrics(port)
    finally:
        stop_worker(process)
    assert found[("trellis_worker_wakeups_total", (("cause", "announced"),))] > before
    assert ("trellis_worker_wakeups_total", (("cause", "poll"),)) not in found
