"""Secrets in bindings (issue 26): the value reaches the task that uses it and nothing else. The trace, the
RunState, the result, the error and retry messages show ``secret <name>``; an unknown secret fails the step with
``secret.unknown``; a document names secrets only by a valid name, and a template holds ``{secret}`` once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from runtime import Engine, Workflow, WorkflowBuilder
from runtime.document import InputBinding
from runtime.engine import EngineOptions
from runtime.errors import TaskError
from runtime.secrets import MappingSecrets, SecretNotFoundError, secret_diagnostics
from runtime.tasks import TaskRegistry

KEY = "sk-live-4242-very-secret"


def registry(seen: list[Any]) -> TaskRegistry:
    tasks = TaskRegistry()

    @tasks.task
    def call_api(headers: dict[str, Any], echo: bool = False, fail: bool = False) -> dict[str, Any]:
        seen.append(headers)
        if fail:
            raise TaskError(f"the API refused {headers['Authorization']}")
        return {"sent": headers["Authorization"] if echo else "ok", "nested": [{"k": headers["Authorization"]}]}

    return tasks


def document(**binding: Any) -> Workflow:
    g = WorkflowBuilder("api", "API", input_schema={"type": "object", "properties": {
        "echo": {"type": "boolean"}, "fail": {"type": "boolean"}}})
    g.use("call_api", id="call", input=[
        {"target": "headers.Authorization", **({"secret": "api_key", "template": "Bearer {secret}"} | binding)},
        {"target": "echo", "path": "input.echo"}, {"target": "fail", "path": "input.fail"}],
        output=[{"source": ".", "target": "answer"}])
    g.output("answer", "state.answer")
    return g.build()


def everything(result: Any) -> str:
    return json.dumps([result.run_state.model_dump(mode="json"), [event.to_dict() for event in result.trace],
                       result.output, result.error.to_dict() if result.error else None], default=str)


def test_the_task_gets_the_value_and_nothing_else_keeps_it() -> None:
    seen: list[Any] = []
    result = Engine(registry=registry(seen), options=EngineOptions(secrets={"api_key": KEY}, keep_trace=None)).run(
        document(), {"echo": True, "fail": False})
    assert result.status == "completed"
    assert seen == [{"Authorization": f"Bearer {KEY}"}]  # the step saw the value, in its template
    assert result.output == {"answer": {"sent": "Bearer secret api_key", "nested": [{"k": "Bearer secret api_key"}]}}
    started = next(event for event in result.trace if event.kind == "node_started" and event.node_id == "call")
    assert started.to_dict()["summary"]["input"]["headers"] == {"Authorization": "secret api_key"}
    assert KEY not in everything(result)


def test_an_error_and_its_retries_never_carry_the_value() -> None:
    seen: list[Any] = []
    data = document().model_dump(mode="json")
    data["nodes"][0]["retry"] = {"max_attempts": 2}
    failing = Workflow.model_validate(data)
    result = Engine(registry=registry(seen), options=EngineOptions(secrets={"api_key": KEY}, keep_trace=None)).run(
        failing, {"echo": False, "fail": True})
    assert result.status == "failed" and len(seen) == 2
    assert "the API refused Bearer secret api_key" in json.dumps(result.error.to_dict())
    assert KEY not in everything(result)


@pytest.mark.parametrize("secrets", [{"other": "x"}, None])
def test_an_unknown_secret_fails_its_step_naming_it(secrets: Any) -> None:
    result = Engine(registry([]), EngineOptions(secrets=secrets)).run(document(), {"echo": False, "fail": False})
    assert result.status == "failed"
    cause = result.error.to_dict()["cause"]
    assert cause["code"] == "secret.unknown" and cause["secret"] == "api_key" and "'call'" in cause["message"]


def test_a_resolver_is_asked_by_name_and_node_for_each_step() -> None:
    asked: list[tuple[str, str]] = []

    class Vault(MappingSecrets):
        def reveal(self, name: str, *, node_id: str) -> str:
            asked.append((name, node_id))
            return super().reveal(name, node_id=node_id)

    Engine(registry([]), EngineOptions(secrets=Vault({"api_key": KEY}))).run(document(), {"echo": False, "fail": False})
    assert asked == [("api_key", "call")]
    with pytest.raises(SecretNotFoundError):
        MappingSecrets({}).reveal("x", node_id="n")


def test_bindings_name_a_secret_rightly_and_round_trip() -> None:
    binding = InputBinding.model_validate({"target": "token", "secret": "api_key"})
    assert binding.model_dump(mode="json") == {"target": "token", "secret": "api_key"}
    templated = {"target": "h.a", "secret": "api_key", "template": "Bearer {secret}"}
    assert InputBinding.model_validate(templated).model_dump(mode="json") == templated
    for bad, words in (({"secret": "api key"}, "pattern"), ({"secret": "k", "path": "input.x"}, "both"),
                       ({"secret": "k", "template": "Bearer"}, "{secret}"), ({"value": 1, "template": "{secret}"},
                                                                              "goes with a secret")):
        with pytest.raises(ValidationError, match=words):
            InputBinding.model_validate({"target": "t", **bad})


def test_secret_diagnostics_name_the_node_the_field_and_the_secret() -> None:
    found = secret_diagnostics(document(), known={"other"})
    assert [(d.code, d.severity, d.node_id, d.field, d.data) for d in found] == [
        ("binding.unknown_secret", "error", "call", "input.headers.Authorization", {"secret": "api_key"})]
    assert "other" in (found[0].hint or "")
    assert secret_diagnostics(document(), known={"api_key"}) == []
