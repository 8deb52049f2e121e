"""The list filters (designer/core/filters.py): one FilterSet per list, read alike by the pages and the
API. A value that cannot mean anything is dropped by a page (which shows the list without it and says so) and
refused by the API (400 naming the parameter). Workflows shared with the caller's teams are in both workflow
lists, marked."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from designer.access import grants as grant_services
from designer.models import Run
from designer.runs.services import start_run
from designer.workflows import services as workflow_services
from tests.designer.clients import client_for

pytestmark = pytest.mark.django_db


def page_run_ids(response: Any) -> list[int]:
    return [int(n) for n in re.findall(r'<tr data-run="(\d+)"', response.content.decode())]


@pytest.fixture
def runs(cast: Any, workflow: Any) -> dict[str, Run]:
    version = workflow_services.publish_workflow(actor=cast.owner, workflow=workflow)
    made = {
        "draft": start_run(actor=cast.owner, workflow=workflow, input={"amount": 1}),
        "pinned": start_run(actor=cast.editor, workflow=workflow, input={"amount": 2}, version=version.number),
        "old": start_run(actor=cast.editor, workflow=workflow, input={"amount": 3}),
    }
    Run.objects.filter(pk=made["old"].pk).update(status="failed", created_at=timezone.now() - timedelta(days=10))
    return made


BAD_RUN_FILTERS = [
    ("status", "bogus", "unknown run status bogus"),
    ("status", "queued,nope", "unknown run status nope"),
    ("version", "v2", "published version number"),
    ("version", "0", "published version number"),
    ("workflow", "abc", "must be an id"),
    ("team", "-3", "must be an id"),
    ("created_by", "x" * 151, "at most 150 characters"),
    ("since", "2024-02-30", "valid date"),
    ("until", "yesterday", "valid date"),
]


@pytest.mark.parametrize(("name", "value", "says"), BAD_RUN_FILTERS, ids=lambda v: str(v)[:12])
def test_a_bad_run_filter_is_a_400_in_the_api_and_dropped_with_a_notice_on_the_page(
        name: str, value: str, says: str, cast: Any, api: Any, runs: dict[str, Run]) -> None:
    response = api(cast.viewer).get(reverse("api:run-list"), {name: value})
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "request.invalid" and body["field"] == name and says in body["message"]
    assert body["errors"] == [{"loc": name, "msg": body["message"].removeprefix(f"{name} ")}]

    # The page shows every run (the filter dropped), with the filter left empty and a notice naming it.
    shown = client_for(cast.viewer).get(reverse("run-list"), {name: value, "status": "failed"} if name != "status"
                                  else {name: value})
    assert shown.status_code == 200
    expected = {runs["old"].pk} if name != "status" else {r.pk for r in runs.values()}
    assert set(page_run_ids(shown)) == expected
    assert shown.context["filters"][name] == ""
    assert f"{name}: " in shown.context["filter_notice"] and says in shown.context["filter_notice"]
    assert "Some filters were ignored" in shown.content.decode()


def test_the_api_names_every_bad_parameter_at_once(cast: Any, api: Any, runs: dict[str, Run]) -> None:
    body = api(cast.viewer).get(reverse("api:run-list"), {"status": "x", "since": "nope", "team": "1"}).json()
    assert sorted(error["loc"] for error in body["errors"]) == ["since", "status"]


@pytest.mark.parametrize("query", [
    {"status": "failed"},
    {"status": "cancelled,failed"},
    {"version": "draft"},
    {"version": "1"},
    {"created_by": "eddie"},
    {"since": "TODAY-1"},
    {"until": "TODAY-1"},
    {"team": "TEAM", "status": "queued"},
    {"workflow": "WORKFLOW", "version": "draft", "created_by": "olivia"},
])
def test_page_and_api_filter_runs_alike(query: dict[str, str], cast: Any, api: Any, workflow: Any,
                                        runs: dict[str, Run]) -> None:
    yesterday = (timezone.localdate() - timedelta(days=1)).isoformat()
    replace = {"TODAY-1": yesterday, "TEAM": str(cast.team.pk), "WORKFLOW": str(workflow.pk)}
    query = {key: replace.get(value, value) for key, value in query.items()}
    from_api = [row["id"] for row in api(cast.viewer).get(reverse("api:run-list"), query).json()["results"]]
    from_page = page_run_ids(client_for(cast.viewer).get(reverse("run-list"), query))
    assert from_api == from_page
    assert 0 < len(from_api) < len(runs)  # each query really narrows the list


def _chips(response: Any) -> dict[str, tuple[str, str]]:
    """The page's hidden-filter chips: name -> (what it shows, the link that drops it)."""
    found = re.findall(r'<span class="filter-chip" data-filter="(\w+)">.*?: <strong>(.*?)</strong> <a href="([^"]*)"',
                       response.content.decode())
    return {name: (label, link.replace("&amp;", "&")) for name, label, link in found}


def test_a_filter_the_page_has_no_control_for_is_shown_with_a_link_that_drops_it(
        cast: Any, workflow: Any, runs: dict[str, Run]) -> None:
    workflow.name = "<b>Shop</b> orders"
    workflow.save(update_fields=["name"])
    client = client_for(cast.viewer)
    shown = client.get(reverse("run-list"), {"workflow": str(workflow.pk), "version": "1", "status": "failed"})
    assert page_run_ids(shown) == []  # the pinned run is queued: "No runs match", and the chips say why
    chips = _chips(shown)
    assert set(chips) == {"workflow", "version"}  # status has its select
    assert chips["workflow"][0] == "&lt;b&gt;Shop&lt;/b&gt; orders" and chips["version"][0] == "v1"
    assert chips["workflow"][1] == f"{reverse('run-list')}?status=failed&version=1"
    assert page_run_ids(client.get(chips["workflow"][1])) == []
    assert set(page_run_ids(client.get(chips["version"][1].replace("status=failed", "")))) == {
        r.pk for r in runs.values()}
    # Kept when another filter changes: the form carries it as a hidden field.
    assert f'<input type="hidden" name="workflow" value="{workflow.pk}">' in shown.content.decode()
    # A team's page has a workflow select but no team one; a workflow's page neither.
    on_team = client.get(reverse("team-runs", args=[cast.team.pk]), {"team": "999999", "workflow": str(workflow.pk)})
    assert set(_chips(on_team)) == {"team"} and "not one of yours" in _chips(on_team)["team"][0]
    on_workflow = client.get(reverse("workflow-runs", args=[workflow.pk]), {"workflow": "999999"})
    assert page_run_ids(on_workflow) == [] and "#999999" in _chips(on_workflow)["workflow"][0]
    assert not _chips(client.get(reverse("run-list"), {"status": "failed"}))


# --- workflows: shared ones listed, marked, filtered ---------------------------------------------------------


@pytest.mark.parametrize("role", ["viewer", "runner", "editor"])
def test_the_api_lists_workflows_shared_with_my_team_marked_with_the_holding_team_and_role(
        role: str, cast: Any, api: Any, workflow: Any) -> None:
    own = workflow_services.create_workflow(actor=cast.stranger, team=cast.other_team, name="Mine")
    grant_services.grant_workflow(actor=cast.owner, workflow=workflow, team=cast.other_team.slug, role=role)
    client = api(cast.stranger)

    def listed(**query: Any) -> dict[int, dict[str, Any]]:
        response = client.get(reverse("api:workflow-list"), query)
        assert response.status_code == 200, response.content
        return {row["id"]: row for row in response.json()}

    rows = listed()
    assert set(rows) == {workflow.pk, own.pk}
    shared = rows[workflow.pk]
    assert (shared["shared"], shared["team"], shared["team_name"], shared["grant_role"]) == (
        True, cast.team.pk, "Acme", role)
    assert shared["granted_to"] == [{"team": cast.other_team.pk, "team_name": "Other", "role": role}]
    assert (rows[own.pk]["shared"], rows[own.pk]["grant_role"], rows[own.pk]["granted_to"]) == (False, None, [])

    assert set(listed(shared="true")) == {workflow.pk}
    assert set(listed(shared="false")) == {own.pk}
    assert set(listed(team=cast.other_team.pk)) == {workflow.pk, own.pk}  # the team's list: own and shared
    assert set(listed(q="Mine")) == {own.pk}
    assert set(listed(q="Mine", shared="true")) == set()
    # The holding team sees it as its own, and the detail answers in the same shape.
    owner_rows = {row["id"]: row for row in api(cast.owner).get(reverse("api:workflow-list")).json()}
    assert owner_rows[workflow.pk]["shared"] is False
    detail = client.get(reverse("api:workflow-detail", args=[workflow.pk])).json()
    assert (detail["shared"], detail["grant_role"]) == (True, role)

    refused = client.get(reverse("api:workflow-list"), {"shared": "maybe"})
    assert refused.status_code == 400 and refused.json()["field"] == "shared"


def test_the_workflow_list_page_shows_shared_workflows_and_filters_them(cast: Any, workflow: Any) -> None:
    own = workflow_services.create_workflow(actor=cast.stranger, team=cast.other_team, name="Mine")
    grant_services.grant_workflow(actor=cast.owner, workflow=workflow, team=cast.other_team.slug, role="runner")
    client = client_for(cast.stranger)

    body = client.get(reverse("home")).content.decode()
    row = re.search(rf'<tr data-workflow="{workflow.slug}" data-shared="true" data-grant-role="runner">(.*?)</tr>',
                    body, re.S)
    assert row, body
    assert "Acme" in row.group(1) and "Other: runner" in row.group(1) and "Duplicate" not in row.group(1)
    assert f'data-workflow="{own.slug}"' in body

    only_shared = client.get(reverse("home"), {"shared": "true"}).content.decode()
    assert 'data-shared="true"' in only_shared and f'data-workflow="{own.slug}"' not in only_shared
    only_own = client.get(reverse("home"), {"shared": "false"}).content.decode()
    assert 'data-shared="true"' not in only_own and f'data-workflow="{own.slug}"' in only_own

    dropped = client.get(reverse("home"), {"shared": "maybe", "q": "Mine"})
    assert dropped.status_code == 200 and "shared: must be true or false" in dropped.context["filter_notice"]
    # The rest of the filters still apply.
    assert dropped.context["match_count"] == 1 and dropped.context["q"] == "Mine"

    # A member of the holding team sees it in that team's group, not as shared.
    assert 'data-shared="true"' not in client_for(cast.viewer).get(reverse("home")).content.decode()


# --- sharing: one rule on the page and in the API -----------------------------------------------------------


@pytest.mark.parametrize("grant", [None, "viewer", "runner", "editor"])
def test_whom_a_workflow_is_shared_with_follows_one_rule_on_the_page_and_in_the_api(
        grant: str | None, cast: Any, api: Any, workflow: Any) -> None:
    if grant:
        grant_services.grant_workflow(actor=cast.owner, workflow=workflow, team=cast.other_team.slug, role=grant)
    expected = 403 if grant else 404
    sharing_page = client_for(cast.stranger).get(reverse("workflow-sharing", args=[workflow.pk]))
    grants_api = api(cast.stranger).get(reverse("api:workflow-grants", args=[workflow.pk]))
    assert (sharing_page.status_code, grants_api.status_code) == (expected, expected)
    if grant:
        assert "only members of its own team may see whom it is shared with" in grants_api.json()["message"]
        assert "only members of its own team may see whom it is shared with" in sharing_page.content.decode()
        # The pages a grant holder reaches do not offer the Sharing page.
        for name in ("editor", "workflow-runs", "workflow-page"):
            shown = client_for(cast.stranger).get(reverse(name, args=[workflow.pk])).content.decode()
            assert reverse("workflow-sharing", args=[workflow.pk]) not in shown
    for member in (cast.owner, cast.viewer):
        assert client_for(member).get(reverse("workflow-sharing", args=[workflow.pk])).status_code == 200
        assert api(member).get(reverse("api:workflow-grants", args=[workflow.pk])).status_code == 200
