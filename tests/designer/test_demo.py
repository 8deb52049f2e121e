"""The demo: idempotent loading, valid documents, and real runs through runtime.Engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import authenticate
from django.core.management import CommandError, call_command
from django.urls import reverse

from demo import data as demo
from designer.models import Membership, Team, Workflow, WorkflowVersion
from designer.workflows import catalog
from designer.workflows.resolvers import TeamVersionResolver
from runtime import Engine, analyze
from runtime.engine import EngineOptions
from runtime.state import RuntimeContext
from tests.runtime.document_support import plain_twin

pytestmark = pytest.mark.django_db


@pytest.fixture
def loaded(settings):
    settings.DEBUG = True
    call_command("load_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    return Team.objects.get(slug="demo")


def _engine(team):
    return Engine(registry=catalog.registry(), options=EngineOptions(workflows=TeamVersionResolver(team)))


def _document(team, slug):
    return Workflow.objects.get(team=team, slug=slug).document


def test_load_demo_is_idempotent(loaded):
    counts = (Team.objects.count(), Membership.objects.count(), Workflow.objects.count(),
              WorkflowVersion.objects.count())
    revisions = dict(Workflow.objects.values_list("slug", "revision"))
    report = demo.load_demo()
    assert (report.created_users, report.created_workflows, report.published) == ([], [], [])
    assert counts == (Team.objects.count(), Membership.objects.count(), Workflow.objects.count(),
                      WorkflowVersion.objects.count())
    assert dict(Workflow.objects.values_list("slug", "revision")) == revisions
    assert sorted(revisions) == ["customer-orders", "orders-via-subgraph", "process-order", "spending-approval"]


def test_demo_accounts_log_in_with_documented_passwords(loaded):
    for username, password, role, superuser in demo.ACCOUNTS:
        user = authenticate(username=username, password=password)
        assert user is not None, username
        assert user.is_superuser is superuser
        assert Membership.objects.get(team=loaded, user=user).role == role


def test_load_demo_refuses_to_run_with_debug_off(settings, db):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="DEBUG"):
        call_command("load_demo")
    assert not Team.objects.exists()


def test_every_demo_workflow_validates_in_the_team(loaded, api):
    from django.contrib.auth import get_user_model

    client = api(get_user_model().objects.get(username="demo"))
    for workflow in Workflow.objects.filter(team=loaded):
        body = client.get(reverse("api:workflow-validate", args=[workflow.pk])).json()
        assert body["ok"], (workflow.slug, body["diagnostics"])
        assert workflow.document["metadata"]["sample_input"]
    assert Workflow.objects.get(team=loaded, slug="process-order").versions.count() == 1


def test_demo_workflows_collect_loop_results_without_a_last_item_wins_write(loaded):
    """The demo's loops run one customer at a time, so ``fetch``'s state.orders and the orders loop's results are
    never overwritten by a sibling item; the same document at concurrency 4 is what the analyzer warns about."""
    registry = catalog.registry()
    for workflow in Workflow.objects.filter(team=loaded):
        analysis = analyze(workflow.document, registry=registry, workflows=TeamVersionResolver(loaded))
        assert not [d for d in analysis.diagnostics if d.code == "state.concurrent_write"], workflow.slug
    document = _document(loaded, "customer-orders")
    for node in document["nodes"]:
        if node["id"] == "customers":
            node["max_concurrency"] = 4
    racing = analyze(document, registry=registry)
    assert {d.node_id for d in racing.diagnostics if d.code == "state.concurrent_write"} == {"fetch", "orders"}


def test_nested_foreach_reads_both_items_in_one_task(loaded):
    customers = demo.SAMPLE_CUSTOMERS
    result = _engine(loaded).run(_document(loaded, "customer-orders"), {"customers": customers})
    assert result.status == "completed", result.error
    priced = result.output["priced"]
    fetch = catalog.registry().get("fetch_orders")
    expected_orders = [order for c in customers
                       for order in fetch.finish(fetch.bind({"customer": c}, RuntimeContext())())[1]]
    assert [p["order_id"] for p in priced] == [o["id"] for o in expected_orders]
    by_id = {c["id"]: c for c in customers}
    for row in priced:
        # customer comes from context.foreach.customers.item, the order from context.foreach.orders.item
        assert row["order_id"].startswith(row["customer_id"] + "-")
        assert row["customer_name"] == by_id[row["customer_id"]]["name"]
    assert result.output["totals"]["orders"] == len(priced)
    assert result.output["totals"]["total"] == pytest.approx(sum(p["total"] for p in priced))


def test_parent_calls_the_published_child_per_order(loaded):
    customers = demo.SAMPLE_CUSTOMERS[:2]
    engine = _engine(loaded)
    via = engine.run(_document(loaded, "orders-via-subgraph"), {"customers": customers})
    assert via.status == "completed", via.error
    direct = engine.run(_document(loaded, "customer-orders"), {"customers": customers})
    assert [r["priced"] for r in via.output["results"]] == direct.output["priced"]
    assert all(r["shipment"]["order_id"] == r["priced"]["order_id"] for r in via.output["results"])


def test_approval_waits_for_a_person_above_the_limit(loaded):
    engine = _engine(loaded)
    document = _document(loaded, "spending-approval")
    small = engine.run(document, {"amount": 200, "requester": "ann"})
    assert small.status == "completed"
    assert small.output["decision"] == {"approved": True, "comment": "below the review limit",
                                        "decided_by": "system"}

    large = engine.run(document, {"amount": 5000, "requester": "bob", "purpose": "servers"})
    assert large.status == "interrupted"
    (interrupt,) = large.interrupts
    assert interrupt.node_id == "review" and interrupt.payload["amount"] == 5000
    done = engine.resume(large.run_state, interrupt.interrupt_id, {"approved": False, "comment": "too much"},
                         workflow=document)
    assert done.status == "completed", done.error
    assert done.output["decision"] == {"approved": False, "comment": "too much", "decided_by": "reviewer"}


DEMO_TASKS = {"fetch_orders", "price_order", "ship_order", "sum_totals", "assess_request", "record_decision"}
READ_CATALOGUE = """
import json
import django
django.setup()
from django.apps import apps
from django.core.management import get_commands
from designer.workflows import catalog
print(json.dumps({"tasks": sorted(catalog.registry().names()), "demo_app": apps.is_installed("demo"),
                  "load_demo": "load_demo" in get_commands()}))
"""


def _catalogue(settings_module: str) -> dict[str, object]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "TRELLIS_"))}
    env["DJANGO_SETTINGS_MODULE"] = settings_module
    result = subprocess.run([sys.executable, "-c", READ_CATALOGUE], cwd=Path(__file__).resolve().parents[2],
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    loaded: dict[str, object] = json.loads(result.stdout)
    return loaded


def test_production_settings_have_no_demo_tasks_and_development_settings_have_them():
    production = _catalogue("designer.settings")
    assert production["demo_app"] is False and production["load_demo"] is False
    assert not DEMO_TASKS & set(production["tasks"])  # type: ignore[arg-type]
    assert "http_request" in production["tasks"]  # type: ignore[operator]  # the built-ins stay

    development = _catalogue("designer.settings_dev")
    assert development["demo_app"] is True and development["load_demo"] is True
    assert DEMO_TASKS <= set(development["tasks"])  # type: ignore[arg-type]


@pytest.mark.parametrize("entry", demo.WORKFLOWS, ids=lambda entry: entry.build.__name__)
def test_demo_documents_dump_the_same_bytes_as_with_plain_json_values(entry):
    # A document's schemas, metadata and literals are read-only dict/list subclasses; what is stored and served
    # must be byte for byte what the same document holding plain dicts and lists dumps.
    document = demo.with_sample_input(entry)
    twin = plain_twin(document)
    assert type(twin.input_schema) is dict and type(twin.metadata["sample_input"]) is dict
    assert document.model_dump_json() == twin.model_dump_json()
    assert json.dumps(document.model_dump(mode="json")) == json.dumps(twin.model_dump(mode="json"))
