"""Hostile request values get a clear 4xx (or are ignored as filters), never a 500.

Ids beyond 64 bits used to reach SQLite through foreign-key lookups (OverflowError), digits
``isdigit`` accepts but ``int`` refuses ("²") reached ``int()``, impossible dates reached
``parse_date`` and deeply nested JSON exhausted the recursion limit while decoding or serializing.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import example, given
from hypothesis import strategies as st

from designer.core.errors import BadRequest
from designer.core.untrusted import MAX_JSON_DEPTH, JSONInputError, form_json, loads_json, nesting_depth, parse_id
from tests.designer.clients import client_for

pytestmark = pytest.mark.django_db

HUGE = "99999999999999999999999"


def page_client(user: Any) -> Client:
    """A crash in a view comes back as the 500 page a browser would see."""
    return client_for(user, raise_request_exception=False)


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def deep_text(depth: int) -> str:
    return "[" * depth + "]" * depth


# --- the helpers ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, expected", [
    (1, 1), ("42", 42), (" 7 ", 7), (2**63 - 1, 2**63 - 1),
    (0, None), (-3, None), (True, None), (2**63, None), (HUGE, None), ("²", None), ("١٢", None),
    ("1e3", None), ("", None), (None, None), (3.0, None), ("9" * 5000, None),
])
def test_parse_id(value: object, expected: int | None) -> None:
    assert parse_id(value) == expected


def test_loads_json_bounds_depth_and_refuses_constants() -> None:
    assert nesting_depth(loads_json(json.dumps(nested(MAX_JSON_DEPTH - 1)))) == MAX_JSON_DEPTH - 1
    for text in (json.dumps(nested(MAX_JSON_DEPTH + 1)), deep_text(100_000)):
        with pytest.raises(JSONInputError, match=f"nested more than {MAX_JSON_DEPTH} levels"):
            loads_json(text)
    with pytest.raises(JSONInputError, match="NaN is not valid JSON"):
        loads_json('{"x": NaN}')
    with pytest.raises(json.JSONDecodeError):
        loads_json("{oops")


@pytest.mark.parametrize("text", ['["\\ud800"]', '{"k": ["\\udfff"]}', '{"\\udc00": 1}'])
def test_loads_json_refuses_unpaired_surrogates(text: str) -> None:
    with pytest.raises(JSONInputError, match="unpaired surrogate"):
        loads_json(text)


def test_loads_json_keeps_nul_characters() -> None:
    assert loads_json('{"a": "x\\u0000y", "\\u0000": ["\\u0000"]}') == {"a": "x\0y", "\0": ["\0"]}


def test_loads_json_keeps_real_unicode() -> None:
    assert loads_json('{"emoji": "\\ud83d\\ude00", "text": "caf\\u00e9"}') == {"emoji": "\U0001f600", "text": "café"}


# --- API ------------------------------------------------------------------------------------------------


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)


@given(JSON_VALUES, st.sampled_from([None, 2]))
def test_form_json_reads_every_json_value(value: Any, indent: int | None) -> None:
    assert form_json(json.dumps(value, indent=indent), field="input", what="the input") == value


@given(st.one_of(st.text(max_size=30), JSON_VALUES.map(json.dumps).flatmap(
    lambda text: st.integers(0, max(0, len(text) - 1)).map(lambda cut: text[:cut] + "}" + text[cut:]))))
@example("{oops")
@example("[1, 2,\n  3,]")
@example("NaN")
@example("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1))
def test_form_json_refuses_anything_else_as_a_bad_request_naming_the_field(text: str) -> None:
    """Any text is either read as ``loads_json`` reads it or refused with a BadRequest that names the field; a
    decoding error says the line and column where the text breaks."""
    try:
        expected = loads_json(text)
    except json.JSONDecodeError as exc:
        with pytest.raises(BadRequest) as refused:
            form_json(text, field="sample", what="the sample")
        assert refused.value.details == {"field": "sample"}
        assert refused.value.message.startswith("the sample is not valid JSON: ")
        assert refused.value.message.endswith(f"(line {exc.lineno}, column {exc.colno})")
    except JSONInputError as exc:
        with pytest.raises(BadRequest) as refused:
            form_json(text, field="sample", what="the sample")
        assert refused.value.details == {"field": "sample"}
        assert refused.value.message == f"the sample: {exc}"
    else:
        assert form_json(text, field="sample", what="the sample") == expected


@given(st.text(alphabet=" \t\r\n", max_size=5))
def test_form_json_blank_text_is_the_empty_value_or_refused(blank: str) -> None:
    assert form_json(blank, field="outputs", what="the outputs", empty=[]) == []
    with pytest.raises(BadRequest, match=r"the outputs is not valid JSON: Expecting value \(line \d+, column \d+\)"):
        form_json(blank, field="outputs", what="the outputs")



def test_api_refuses_deep_json_with_a_400(cast: Any, api: Any, workflow: Any) -> None:
    client = api(cast.owner)
    url = reverse("api:workflow-document", args=[workflow.pk])
    for body in (deep_text(100_000), json.dumps({"revision": workflow.revision, "document": nested(300)})):
        response = client.put(url, data=body, content_type="application/json")
        assert response.status_code == 400, response.content
        assert response.json()["code"] == "request.malformed"
        assert f"nested more than {MAX_JSON_DEPTH} levels" in response.json()["message"]
    workflow.refresh_from_db()
    assert workflow.revision == 1  # nothing stored

    runs = client.post(reverse("api:workflow-runs", args=[workflow.pk]),
                       data=json.dumps({"input": {"amount": 1, "extra": nested(300)}, "version": "draft"}),
                       content_type="application/json")
    assert runs.status_code == 400 and runs.json()["code"] == "request.malformed"

    want = client.get(reverse("api:workflow-analysis", args=[workflow.pk]),
                      {"node": "assess", "want": deep_text(5000)})
    assert want.status_code == 400 and "nested more than" in want.json()["message"]


def test_api_refuses_unpaired_surrogates(cast: Any, api: Any, workflow: Any) -> None:
    # A client can send the escape of a lone surrogate (\\ud800) in JSON text.
    body = json.dumps({"revision": workflow.revision,
                       "document": {"id": "x", "nodes": [], "metadata": {"note": "a@b"}}}).replace("@", "\\ud800")
    response = api(cast.owner).put(reverse("api:workflow-document", args=[workflow.pk]), data=body,
                                   content_type="application/json")
    assert response.status_code == 400 and "unpaired surrogate" in response.json()["message"]


def test_api_refuses_control_characters_in_node_ids(cast: Any, api: Any, workflow: Any) -> None:
    # NUL is kept in values, but a node id names trace rows (text columns PostgreSQL refuses NUL in) and pages.
    from tests.designer.test_exact_json import nul_document

    document = nul_document()
    document["nodes"][0]["id"] = document["start"] = document["routes"][0]["source"] = "e\0cho"
    response = api(cast.owner).put(reverse("api:workflow-document", args=[workflow.pk]),
                                   {"revision": workflow.revision, "document": document}, format="json")
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "document.invalid"
    assert "a node id may not contain control characters" in body["message"]
    assert {error["loc"] for error in body["errors"]} == {"nodes.0.task.id", "routes.0.source"}


def test_api_refuses_non_finite_numbers(cast: Any, api: Any, workflow: Any) -> None:
    response = api(cast.owner).post(reverse("api:workflow-runs", args=[workflow.pk]),
                                    data='{"input": {"amount": NaN}}', content_type="application/json")
    assert response.status_code == 400 and "NaN is not valid JSON" in response.json()["message"]


def test_api_ids_beyond_64_bits_are_not_found(cast: Any, api: Any, workflow: Any) -> None:
    client = api(cast.owner)
    client.raise_request_exception = False
    team = cast.team.pk

    # In a body an id is typed by the schema (1 to 2**63-1): beyond it is a 400 naming the field.
    created = client.post(reverse("api:workflow-list"), {"team": int(HUGE), "name": "x"}, format="json")
    assert created.status_code == 400 and created.json()["errors"][0]["loc"] == "team"

    copied = client.post(reverse("api:workflow-duplicate", args=[workflow.pk]), {"team": int(HUGE)}, format="json")
    assert copied.status_code == 400

    member = reverse("api:team-member", args=[team, int(HUGE)])
    assert client.patch(member, {"role": "owner"}, format="json").status_code == 404
    assert client.delete(member).status_code == 404

    listed = client.get(reverse("api:workflow-list"), {"team": HUGE})
    # A filter value that cannot name any team is a 400 naming the parameter (designer.core.filters), as for runs.
    assert listed.status_code == 400 and listed.json()["field"] == "team", listed.json()


def test_api_run_filters_with_impossible_ids(cast: Any, api: Any) -> None:
    client = api(cast.owner)
    client.raise_request_exception = False
    url = reverse("api:run-list")
    for name in ("workflow", "team"):
        response = client.get(url, {name: HUGE})
        assert response.status_code == 400, response.content
        assert response.json()["field"] == name and "must be an id" in response.json()["message"]
    assert client.get(url, {"version": HUGE}).status_code == 400
    assert client.get(url, {"created_by": HUGE}).json()["count"] == 0  # read as a username: nobody
    assert client.get(reverse("api:run-events", args=[1]), {"after": HUGE}).status_code in (400, 404)


# --- pages ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", [
    {"created_by": "x" * 151}, {"team": HUGE}, {"workflow": HUGE}, {"version": "²"}, {"version": HUGE},
    {"since": "2020-99-99"}, {"until": "2024-02-30"},
])
def test_run_history_ignores_filters_that_cannot_match(cast: Any, query: dict[str, str]) -> None:
    response = page_client(cast.owner).get(reverse("run-list"), query)
    assert response.status_code == 200
    assert all(response.context["filters"][name] == "" for name in query)
    # ... and says so, naming the parameter it dropped.
    assert f"{next(iter(query))}: " in response.context["filter_notice"]
    assert "Some filters were ignored" in response.content.decode()


def test_pages_with_impossible_ids(cast: Any, workflow: Any) -> None:
    client = page_client(cast.owner)
    assert client.get(reverse("workflow-list"), {"team": HUGE}).status_code == 200
    assert client.get(reverse("home"), {"team": HUGE}).status_code == 200
    assert client.get(reverse("run-panel", args=[workflow.pk]), {"version": "²"}).status_code == 200
    team = cast.team.pk
    for name, data in (("team-member-update", {"role": "owner"}), ("team-member-remove", {})):
        answered = client.post(reverse(name, args=[team, int(HUGE)]), data, follow=True)
        assert answered.status_code == 200 and "not a member of the team" in answered.content.decode()

    created = client.post(reverse("workflow-create"), {"team": HUGE, "name": "x"})
    assert created.status_code == 400
    assert "Could not create the workflow: this team does not exist" in created.content.decode()

    copied = client.post(reverse("workflow-duplicate", args=[workflow.pk]), {"team": HUGE}, follow=True)
    assert copied.status_code == 200 and "Could not duplicate" in copied.content.decode()


def test_run_form_refuses_deep_json(cast: Any, workflow: Any) -> None:
    response = page_client(cast.owner).post(reverse("run-start", args=[workflow.pk]),
                                            {"_mode": "json", "_json": deep_text(50_000)})
    assert response.status_code == 400
    assert f"nested more than {MAX_JSON_DEPTH} levels" in response.content.decode()


def test_import_page_refuses_deep_json(cast: Any) -> None:
    upload = io.BytesIO(deep_text(100_000).encode())
    upload.name = "deep.json"
    response = page_client(cast.owner).post(reverse("workflow-import"), {"team": cast.team.pk, "file": upload},
                                            follow=True)
    assert response.status_code == 200
    assert "Could not import deep.json: not usable JSON" in response.content.decode()


def test_team_names_are_bounded_on_the_page(cast: Any) -> None:
    response = page_client(cast.owner).post(reverse("team-list"), {"name": "x" * 500})
    assert response.status_code == 400
    assert "at most 120 characters" in response.content.decode()


def test_pages_refuse_nul_characters(cast: Any, workflow: Any) -> None:
    client = page_client(cast.owner)
    team = client.post(reverse("team-list"), {"name": "Nul\0team"})
    assert team.status_code == 400 and "NUL characters" in team.content.decode()

    created = client.post(reverse("workflow-create"), {"team": cast.team.pk, "name": "a\0b"}, follow=True)
    assert "name may not contain NUL characters" in created.content.decode()
    described = client.post(reverse("workflow-create"), {"team": cast.team.pk, "name": "ok", "description": "\0"},
                            follow=True)
    assert "description may not contain NUL characters" in described.content.decode()


def test_run_form_keeps_nul_characters(cast: Any) -> None:
    from designer.workflows import services as workflow_services
    from runtime import WorkflowBuilder

    graph = WorkflowBuilder("greet", "Greet", input_schema={
        "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
    graph.use("set_value", id="echo", input=[{"target": "value", "path": "input.name"}])
    greet = workflow_services.create_workflow(actor=cast.owner, team=cast.team, name="Greet",
                                              document=graph.build().model_dump(mode="json"))

    response = page_client(cast.owner).post(reverse("run-start", args=[greet.pk]), {"field.name": "a\0b"})

    assert response.status_code in (200, 302), response.content.decode()[:500]
    assert greet.runs.get().input == {"name": "a\0b"}


def test_a_body_of_the_wrong_shape_is_named_as_the_request_body(cast: Any, api: Any, workflow: Any) -> None:
    response = api(cast.owner).put(reverse("api:workflow-document", args=[workflow.pk]), data="[1, 2]",
                                   content_type="application/json")
    assert response.status_code == 400
    body = response.json()
    assert body["errors"][0]["loc"] == "(request body)"
    assert body["message"].startswith("(request body): Invalid data. Expected a dictionary, but got list.")


def test_a_refused_create_keeps_what_was_typed(cast: Any) -> None:
    response = page_client(cast.editor).post(
        reverse("workflow-create"), {"team": cast.team.pk, "name": "Bad\0name", "description": "keep <me>"})

    assert response.status_code == 400
    html = response.content.decode()
    assert "Could not create the workflow: name may not contain NUL characters" in html
    assert 'value="keep &lt;me&gt;"' in html  # kept, and escaped
    assert f'<option value="{cast.team.pk}" selected>' in html
