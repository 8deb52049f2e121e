"""Runs found by a value of their input or output (issue 29): ``?input.order=A-1042`` on the API, the runs list's
Value box, ``[*]`` for any item of a list; scoped to the caller's teams; a search that cannot mean anything is a
400 (API) or a notice (page) saying how to write it. The values come from the real worker's outputs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from hypothesis import given
from hypothesis import strategies as st

from designer.core.errors import BadRequest
from designer.models import Run, RunValue
from designer.runs import services as run_services
from designer.runs import values as run_values
from designer.runs.checkpointer import OrmCheckpointer
from designer.runs.executor import execute
from runtime import WorkflowBuilder


def totals_document() -> dict[str, Any]:
    """The order's total (a + b) as the run's output, the order and its customers as the input."""
    g = WorkflowBuilder("totals", "Totals", input_schema={"type": "object", "properties": {
        "order": {"type": "string"}, "a": {"type": "integer"}, "b": {"type": "integer"},
        "customers": {"type": "array", "items": {"type": "object"}}}, "required": ["order", "a", "b"]})
    g.use("math", id="add", input=[{"target": "op", "value": "add"}, {"target": "a", "path": "input.a"},
                                   {"target": "b", "path": "input.b"}],
          output=[{"source": ".", "target": "total"}])
    g.output("total", "state.total")
    g.output("order", "input.order")
    return g.build().model_dump(mode="json")


@pytest.fixture
def runs(cast: Any, run_worker: Any) -> dict[str, Any]:
    owner, stranger = cast.owner, cast.stranger
    mine, theirs = cast.workflow("Totals", totals_document()), cast.their_workflow("Totals", totals_document())
    started = {
        "a1042": run_services.start_run(actor=owner, workflow=mine, input={
            "order": "A-1042", "a": 40, "b": 2, "customers": [{"id": "C-100"}, {"id": "C-200"}]}),
        "a1043": run_services.start_run(actor=owner, workflow=mine, input={
            "order": "A-1043", "a": 1, "b": 1, "customers": [{"id": "C-300"}]}),
        "foreign": run_services.start_run(actor=stranger, workflow=theirs, input={
            "order": "A-1042", "a": 40, "b": 2, "customers": [{"id": "C-200"}]}),
    }
    run_worker()
    assert set(Run.objects.values_list("status", flat=True)) == {"completed"}
    return {"owner": owner, **{key: run.pk for key, run in started.items()}}


pytestmark = pytest.mark.django_db(transaction=True)


def found(api: Any, user: Any, query: str) -> list[int]:
    response = api(user).get(f"/api/runs/?{query}")
    assert response.status_code == 200, response.content
    body = response.json()
    return sorted(row["id"] for row in (body["results"] if isinstance(body, dict) else body))


def test_the_api_finds_runs_by_input_and_output_values_of_the_callers_teams_only(runs: dict[str, Any],
                                                                                   api: Any) -> None:
    owner = runs["owner"]
    assert found(api, owner, "input.order=A-1042") == [runs["a1042"]]  # not the other team's run
    assert found(api, owner, "value=input.customers[*].id = C-200") == [runs["a1042"]]
    assert found(api, owner, "input.customers[*].id=C-300") == [runs["a1043"]]
    assert found(api, owner, "output.total=42") == [runs["a1042"]]  # written by the worker when the run ended
    assert found(api, owner, 'input.order="A-1042"') == [runs["a1042"]]  # a value may be written in quotes
    assert found(api, owner, "input.a=40&output.total=2") == []  # several searches must all match
    assert found(api, owner, "input.a=1&output.total=2") == [runs["a1043"]]
    assert found(api, owner, "input.order=A-9999") == []


def test_a_run_driven_again_without_its_checkpoint_keeps_one_set_of_output_values(cast: Any) -> None:
    """A run that ended, lost its checkpoint (``OrmCheckpointer.delete`` keeps the row) and was queued again starts
    from nothing, as a first drive does; but its output's values from the first end are there to be replaced."""
    run = run_services.start_run(actor=cast.owner, workflow=cast.workflow("Totals", totals_document()),
                                 input={"order": "A-7", "a": 40, "b": 2})
    assert execute(run.pk) == "completed"
    OrmCheckpointer(run.team_id).delete(run.runtime_id)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.QUEUED)
    assert execute(run.pk) == "completed"
    assert sorted(RunValue.objects.filter(run_id=run.pk, side="output").values_list("path", "text")) == [
        ("order", "A-7"), ("total", "42")]


def test_a_run_that_fails_when_driven_again_keeps_no_output_values(cast: Any) -> None:
    """The values mirror ``Run.output``: a drive that ends without an output (failed) takes away what an earlier
    end kept, so a value search no longer finds the run by an output it no longer has."""
    run = run_services.start_run(actor=cast.owner, workflow=cast.workflow("Totals", totals_document()),
                                 input={"order": "A-8", "a": 40, "b": 0})
    assert execute(run.pk) == "completed"
    assert RunValue.objects.filter(run_id=run.pk, side="output").count() == 2
    OrmCheckpointer(run.team_id).delete(run.runtime_id)
    dividing = json.loads(json.dumps(run.document).replace('"add"', '"div"'))  # 40 / 0 fails the step
    Run.objects.filter(pk=run.pk).update(status=Run.Status.QUEUED, document=dividing)
    assert execute(run.pk) == "failed"
    run.refresh_from_db()
    assert run.output is None
    assert not RunValue.objects.filter(run_id=run.pk, side="output").exists()
    assert sorted(RunValue.objects.filter(run_id=run.pk, side="input").values_list("path", "text")) == [
        ("a", "40"), ("b", "0"), ("order", "A-8")]


def test_a_search_that_cannot_mean_anything_is_a_400_saying_how_to_write_it(runs: dict[str, Any],
                                                                             api: Any) -> None:
    response = api(runs["owner"]).get("/api/runs/?value=customers.id C-200")
    assert response.status_code == 400
    body = response.json()
    assert body["field"] == "value" and "input.<path> = <value>" in body["message"]
    response = api(runs["owner"]).get("/api/runs/", {"value": "input.customers[0].id = C-200"})
    assert response.status_code == 400 and "[*]" in response.json()["message"]


def test_the_runs_list_has_a_value_box(runs: dict[str, Any], client: Any) -> None:
    client.force_login(runs["owner"])
    page = client.get("/runs/", {"value": "input.customers[*].id = C-200"}).content.decode()
    assert f'href="/runs/{runs["a1042"]}/"' in page and f'href="/runs/{runs["a1043"]}/"' not in page
    assert '<label for="f-value">Value</label>' in page and 'value="input.customers[*].id = C-200"' in page
    page = client.get("/runs/", {"value": "order is A-1042"}).content.decode()
    assert "Some filters were ignored" in page and f'href="/runs/{runs["a1043"]}/"' in page


def test_values_are_bounded_per_run() -> None:
    pairs = run_values.pairs_of({"items": [{"id": n} for n in range(100_000)], "name": "x" * 500})
    assert len(pairs) == run_values.MAX_VALUES
    assert all(path == "items[*].id" for path, _ in pairs)
    assert run_values.pairs_of({"tags": ["a", "a", "b"]}) == [("tags[*]", "a"), ("tags[*]", "b")]


keys = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_-0123456789", min_size=1, max_size=8)
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp")), max_size=20))
documents = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                          st.dictionaries(keys, inner, max_size=3)), max_leaves=12)


@given(st.dictionaries(keys, documents, max_size=4))
def test_every_kept_value_is_found_by_the_search_that_names_it(value: dict[str, Any]) -> None:
    for path, text in run_values.pairs_of(value):
        written = text if not text.startswith('"') else json.dumps(text)
        query = run_values.parse_query(f"input.{path} = {written}")
        assert (query.side, query.path, query.text) == ("input", path, text)


def test_parse_query_refuses_what_names_no_path() -> None:
    for text in ("", "input = 1", "order = 1", "input.a", "state.a = 1", "input.a[0] = 1"):
        with pytest.raises(BadRequest):
            run_values.parse_query(text)


def test_the_migration_copies_existing_runs_values() -> None:
    executor = MigrationExecutor(connection)
    before, after = [("designer", "0023_team_retention")], [("designer", "0024_run_values")]
    executor.migrate(before)
    try:
        old = MigrationExecutor(connection).loader.project_state(before).apps
        team = old.get_model("designer", "Team").objects.create(name="Migrate", slug="migrate")
        workflow = old.get_model("designer", "Workflow").objects.create(team=team, slug="w", name="W")
        run = old.get_model("designer", "Run").objects.create(team=team, workflow=workflow, document={},
                                                              output={"total": 42})
        old.get_model("designer", "RunInput").objects.create(run=run, value={"order": "A-1"})
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        assert sorted(RunValue.objects.filter(run_id=run.pk).values_list("side", "path", "text")) == [
            ("input", "order", "A-1"), ("output", "total", "42")]
        MigrationExecutor(connection).migrate(before)  # and back: the table goes, the runs stay
        assert old.get_model("designer", "Run").objects.filter(pk=run.pk).exists()
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes("designer"))


def test_a_nul_in_a_value_is_kept_and_found_though_postgresql_text_refuses_it(runs: dict[str, Any]) -> None:
    RunValue.objects.record(run_id=runs["a1043"], side="input", value={"\u0000key": "a\u0000b", "plain": "nul"})
    assert set(RunValue.objects.filter(run_id=runs["a1043"], side="input").values_list("path", "text")) == {
        ("\\u0000key", "a\\u0000b"), ("plain", "nul")}
    query = run_values.parse_query('input.\u0000key = "a\\u0000b"')
    assert [run.pk for run in Run.objects.filter(pk__in=RunValue.objects.run_ids_matching(query))] == [runs["a1043"]]
    assert not RunValue.objects.run_ids_matching(run_values.parse_query("input.\u0000key = a"))
