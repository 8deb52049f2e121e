"""``python -m trellis_cli`` against the real server (pytest-django's live server) with a real API token: a
team's workflows pulled into a folder, diffed, edited, pushed back through the one write path; a stale file is
refused and loses nothing; a round trip changes nothing."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from designer.access import teams as team_services
from designer.access import tokens as token_services
from designer.models import Workflow
from designer.workflows import services as workflow_services
from runtime import WorkflowBuilder
from tests.designer.runs_support import REPO_ROOT
from trellis_cli.commands import main

pytestmark = pytest.mark.django_db(transaction=True)


def greeting(name: str = "Greet") -> dict[str, Any]:
    g = WorkflowBuilder("greet", name, input_schema={"type": "object", "properties": {"who": {"type": "string"}}})
    g.use("math", id="double", input=[{"target": "op", "value": "add"}, {"target": "a", "value": 1},
                                      {"target": "b", "value": 2}])
    return g.build().model_dump(mode="json")


@pytest.fixture
def site(live_server: Any, make_user: Any) -> dict[str, Any]:
    owner = make_user("olga")
    team = team_services.create_team(actor=owner, name="Billing")
    other = team_services.create_team(actor=owner, name="Elsewhere")
    greet = workflow_services.create_workflow(actor=owner, team=team, name="Greet", document=greeting())
    workflow_services.publish_workflow(actor=owner, workflow=greet, note="first cut: adds one and two")
    workflow_services.create_workflow(actor=owner, team=team, name="Second", document=greeting("Second"))
    workflow_services.create_workflow(actor=owner, team=other, name="Not ours", document=greeting("Not ours"))
    token = token_services.create_token(actor=owner, name="git sync").secret
    return {"owner": owner, "team": team, "greet": greet, "url": live_server.url, "token": token}


def cli(site: dict[str, Any], *args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["--url", site["url"], "--token", site["token"], *args], out=out)
    return code, out.getvalue()


def pull(site: dict[str, Any], folder: Path, *args: str) -> tuple[int, str]:
    return cli(site, "pull", str(folder), "--team", str(site["team"].pk), *args)


def rename_first_node(path: Path, name: str, **workflow: Any) -> None:
    """Edit a pulled file as a person would in git: its first node's name, and any of its ``workflow`` fields."""
    body = json.loads(path.read_text())
    body["document"]["nodes"][0]["name"] = name
    body["workflow"].update(workflow)
    path.write_text(json.dumps(body))


def snapshot(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def test_pull_writes_one_stable_file_per_workflow_of_the_team_and_a_round_trip_changes_nothing(
        site: dict[str, Any], tmp_path: Path) -> None:
    folder = tmp_path / "flows"
    code, printed = pull(site, folder)
    assert code == 0, printed
    assert sorted(p.name for p in folder.iterdir()) == ["greet.json", "second.json"]  # not the other team's
    body = json.loads((folder / "greet.json").read_text())
    assert {key: value for key, value in body["workflow"].items() if key != "pulled_sha256"} == {
        "id": site["greet"].pk, "team": site["team"].pk, "slug": "greet", "name": "Greet", "description": "",
        "revision": site["greet"].revision}
    assert [(v["number"], v["note"], v["published_by"]) for v in body["versions"]] == [
        (1, "first cut: adds one and two", "olga")]
    assert body["document"] == Workflow.objects.get(pk=site["greet"].pk).document
    first = snapshot(folder)

    revisions = dict(Workflow.objects.values_list("pk", "revision"))
    assert cli(site, "push", str(folder)) == (0, "")  # nothing changed: nothing saved
    assert cli(site, "diff", str(folder)) == (0, "")
    assert pull(site, folder) == (0, "")
    assert snapshot(folder) == first
    assert dict(Workflow.objects.values_list("pk", "revision")) == revisions


def test_an_edited_file_is_diffed_and_pushed_through_the_write_path(site: dict[str, Any], tmp_path: Path) -> None:
    folder = tmp_path / "flows"
    pull(site, folder)
    path = folder / "greet.json"
    rename_first_node(path, "Add one and two", description="adds numbers")

    code, printed = cli(site, "diff", str(folder))
    assert code == 1
    assert '+        "name": "Add one and two",' in printed and '-        "name": null,' in printed
    assert '+  "description": "adds numbers"' in printed

    before = site["greet"].revision
    code, printed = cli(site, "push", str(folder))
    assert code == 0, printed
    saved = Workflow.objects.get(pk=site["greet"].pk)
    assert saved.document["nodes"][0]["name"] == "Add one and two" and saved.description == "adds numbers"
    assert saved.revision == before + 1
    assert json.loads(path.read_text())["workflow"]["revision"] == saved.revision  # the file follows the server
    assert cli(site, "diff", str(folder)) == (0, "")


def test_a_stale_file_is_refused_and_the_newer_draft_is_kept(site: dict[str, Any], tmp_path: Path) -> None:
    folder = tmp_path / "flows"
    pull(site, folder)
    greet = Workflow.objects.get(pk=site["greet"].pk)
    theirs = json.loads(json.dumps(greet.document))
    theirs["nodes"][0]["name"] = "Saved in the editor"
    workflow_services.save_document(actor=site["owner"], workflow=greet, revision=greet.revision, document=theirs)

    path = folder / "greet.json"
    rename_first_node(path, "Edited in git")
    code, printed = cli(site, "push", str(folder))
    assert code == 1
    assert "greet.json: not pushed" in printed and "pull (or diff) and merge first" in printed
    assert Workflow.objects.get(pk=greet.pk).document["nodes"][0]["name"] == "Saved in the editor"

    code, printed = cli(site, "diff", str(folder))
    assert code == 1 and "someone saved since you pulled" in printed
    # Pulling would drop the file's edit: refused without --force, though the server moved on since.
    code, printed = pull(site, folder)
    assert code == 1 and "greet.json: not pulled, it has changes not pushed" in printed
    assert json.loads(path.read_text())["document"]["nodes"][0]["name"] == "Edited in git"


def test_pull_keeps_changes_not_pushed_unless_forced(site: dict[str, Any], tmp_path: Path) -> None:
    folder = tmp_path / "flows"
    pull(site, folder)
    path = folder / "second.json"
    rename_first_node(path, "mine")
    code, printed = pull(site, folder)
    assert code == 1 and "second.json: not pulled, it has changes not pushed" in printed
    assert json.loads(path.read_text())["document"]["nodes"][0]["name"] == "mine"
    assert pull(site, folder, "--force")[0] == 0
    assert json.loads(path.read_text())["document"]["nodes"][0]["name"] is None


def test_a_new_file_is_created_in_the_team(site: dict[str, Any], tmp_path: Path) -> None:
    folder = tmp_path / "flows"
    folder.mkdir()
    (folder / "fresh.json").write_text(json.dumps({"trellis": 1, "workflow": {"name": "Fresh"},
                                                   "document": greeting("Fresh")}))
    code, printed = cli(site, "push", str(folder))
    assert code == 1 and "a new workflow needs a team" in printed
    code, printed = cli(site, "push", str(folder), "--team", str(site["team"].pk))
    assert code == 0, printed
    created = Workflow.objects.get(name="Fresh")
    assert created.team_id == site["team"].pk
    assert json.loads((folder / "fresh.json").read_text())["workflow"]["id"] == created.pk


def test_a_bad_token_or_a_broken_file_is_a_clear_error(site: dict[str, Any], tmp_path: Path) -> None:
    out = io.StringIO()
    assert main(["--url", site["url"], "--token", "nope", "pull", str(tmp_path), "--team", "1"], out=out) == 2
    assert "this API token is not valid" in out.getvalue()
    (tmp_path / "broken.json").write_text("{not json")
    code, printed = cli(site, "diff", str(tmp_path))
    assert code == 2 and "broken.json: not a workflow file" in printed


def test_the_module_runs_as_a_program(site: dict[str, Any], tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "trellis_cli", "--url", site["url"], "--token", site["token"],
                             "pull", str(tmp_path), "--team", str(site["team"].pk)],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "greet.json: Greet at revision" in result.stdout
