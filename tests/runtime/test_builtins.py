"""Built-in tasks, called the way the engine calls them: bind (validate) -> call -> finish."""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import Engine, WorkflowBuilder
from runtime.builtins import BUILTIN_TASKS
from runtime.engine import EngineOptions
from runtime.errors import InputValidationError, TaskError
from runtime.paths import state_path
from runtime.state import RuntimeContext
from runtime.tasks import TaskRegistry, builtin_registry, default_registry

REGISTRY = builtin_registry()


def run(name: str, **payload: Any) -> tuple[str, Any]:
    """Validate, call and finish one built-in like the engine does."""
    spec = REGISTRY.get(name)
    context = RuntimeContext(node_id=f"{name}-node")
    result = spec.bind(payload, context)()
    if inspect.isawaitable(result):
        result = asyncio.run(_await(result))
    return spec.finish(result, context)


async def _await(awaitable: Any) -> Any:
    return await awaitable


def value(name: str, **payload: Any) -> Any:
    label, result = run(name, **payload)
    assert label == REGISTRY.get(name).default_label
    return result


# --- the registry --------------------------------------------------------------------------------


def test_builtin_registry_is_fresh_and_complete() -> None:
    first, second = builtin_registry(), builtin_registry()
    assert first is not second
    assert first.names() == BUILTIN_TASKS
    assert first.get("math") is not second.get("math")
    assert "transform" not in default_registry
    assert len(first.merged(TaskRegistry())) == len(BUILTIN_TASKS)


def test_every_builtin_has_typed_schemas_and_a_description() -> None:
    for spec in REGISTRY:
        assert spec.description, spec.name
        assert spec.input_schema["type"] == "object", spec.name
        assert spec.input_schema["additionalProperties"] is False, spec.name
        json.dumps(spec.input_schema)
        json.dumps(spec.result_schema)
    assert REGISTRY.get("math").input_schema["required"] == ["op"]
    assert REGISTRY.get("compare").labels == ("true", "false")
    assert REGISTRY.get("compare").result_schema == {"type": "boolean"}
    assert REGISTRY.get("length").result_schema == {"type": "integer"}
    response = REGISTRY.get("http_request").result_schema
    assert set(response["properties"]) == {"status", "ok", "url", "headers", "json", "text"}
    assert REGISTRY.get("http_request").input_schema["properties"]["timeout"]["maximum"] == 60
    assert REGISTRY.get("http_request").is_async and REGISTRY.get("wait").is_async


# --- transform -----------------------------------------------------------------------------------


def test_transform_runs_jmespath() -> None:
    data = {"orders": [{"id": "a", "paid": True, "total": 5}, {"id": "b", "paid": False, "total": 7}]}
    assert value("transform", expression="orders[?paid].id", data=data) == ["a"]
    assert value("transform", expression="sum(orders[].total)", data=data) == 12
    assert value("transform", expression="{ids: orders[].id, n: length(orders)}", data=data) == {
        "ids": ["a", "b"], "n": 2,
    }
    assert value("transform", expression="missing.field", data=data) is None


def test_transform_reports_a_bad_expression_with_its_position() -> None:
    with pytest.raises(TaskError) as caught:
        run("transform", expression="orders[?paid", data={})
    assert str(caught.value).startswith("transform: invalid JMESPath expression 'orders[?paid' at position 12:")
    assert caught.value.code == "task.failed"


def test_transform_reports_a_type_error_in_the_data() -> None:
    with pytest.raises(TaskError, match=r"transform: 'sum\(names\)' failed on this data: .*invalid type"):
        run("transform", expression="sum(names)", data={"names": ["a", "b"]})


@pytest.mark.parametrize(("expression", "words"), [
    ("[::0]", "'[::0]' failed on this data: slice step cannot be zero"),
    ("length(@, @)", "'length(@, @)' failed on this data: Expected 1 argument"),
    ("foo[", "'foo[' at position 4: the expression is incomplete (at the end of the expression)"),
    ("a.b.", "'a.b.' at position 4: Expecting: "),
    ("`{", "'`{' at position 0: Unclosed ` delimiter (near '`{')"),
    ("a ~ b", "'a ~ b' at position 2: Unknown token ~ (near '~')"),
    ("&@", "'&@' evaluates to an expression reference ('&...'), not a value"),
])
def test_every_expression_error_is_the_tasks_own_error(expression: str, words: str) -> None:
    with pytest.raises(TaskError) as caught:
        run("transform", expression=expression, data=[1, 2])
    assert words in caught.value.message
    assert "near None" not in caught.value.message


@pytest.mark.filterwarnings("ignore:deprecated string literal syntax")
@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="[]{}()@.:,|&!?<>=*`'\"a0-_ \n", min_size=1, max_size=16))
def test_any_expression_either_evaluates_or_fails_as_a_task_error(expression: str) -> None:
    try:
        run("transform", expression=expression, data={"a": [1, {"b": 2}], "0": "x"})
    except TaskError as exc:
        assert exc.message.startswith("transform: ") and "near None" not in exc.message


def test_transform_cannot_reach_python() -> None:
    with pytest.raises(TaskError, match=r"Unknown function: __import__\(\)"):
        run("transform", expression="__import__('os').system('true')", data={})
    assert value("transform", expression="__class__", data={"x": 1}) is None


# --- template ------------------------------------------------------------------------------------


def test_template_fills_placeholders() -> None:
    values = {"name": "Ada", "order": {"id": "A-1", "total": 12.5}, "tags": ["x", 1], "vip": True, "note": None}
    rendered = value(
        "template",
        template="Dear {name}: order {order.id} costs {order.total:.2f} {{EUR}} {tags} {vip} {note} {name:>5}",
        values=values,
    )
    assert rendered == 'Dear Ada: order A-1 costs 12.50 {EUR} ["x", 1] true null   Ada'


def test_template_without_placeholders_needs_no_values() -> None:
    assert value("template", template="plain {{text}}") == "plain {text}"


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("Hi {who}", "template: placeholder {who} at position 3 has no value: values has no key 'who' (it has: name)"),
        ("{name.first}", "{name.first} at position 0 has no value: name has no key 'first' (it has: a str)"),
        ("{name.__class__}", "placeholder {name.__class__} at position 0 has no value"),
        ("{name[0]}", "placeholder {name[0]} at position 0 is not a name"),
        ("{0}", "placeholder {0} at position 0 has no value"),
        ("{}", "placeholder {} at position 0 is not a name"),
        ("{name!r}", "placeholder {name!r} at position 0 is not a name"),
        ("oops }", "template: unmatched '}' at position 5; write '}}' for a literal brace"),
        ("{name:>99999}", "unsupported format '>99999' in {name:>99999} at position 0"),
        ("{name:.2f}", "cannot format {name:.2f} at position 0: Unknown format code 'f'"),
    ],
)
def test_template_errors_are_explicit(template: str, message: str) -> None:
    with pytest.raises(TaskError) as caught:
        run("template", template=template, values={"name": "Ada"})
    assert message in str(caught.value)


def test_template_format_specs_only_apply_to_numbers_and_text() -> None:
    with pytest.raises(TaskError, match=r"format '>3' in \{flag:>3\} needs a number or text, got a boolean"):
        run("template", template="{flag:>3}", values={"flag": True})


# --- small data helpers --------------------------------------------------------------------------


def test_set_value_is_identity_including_null() -> None:
    assert value("set_value", value={"a": [1, None]}) == {"a": [1, None]}
    assert value("set_value", value=None) is None
    assert value("set_value") is None


def test_collect_tidies_lists() -> None:
    items = [1, None, [2, 3], 1, True, {"a": 1}, {"a": 1}]
    assert value("collect", items=items) == items
    assert value("collect", items=items, drop_nulls=True, unique=True) == [1, [2, 3], True, {"a": 1}]
    assert value("collect", items=items, flatten=True, unique=True) == [1, None, 2, 3, True, {"a": 1}]


def test_length() -> None:
    assert value("length", value=[1, 2, 3]) == 3
    assert value("length", value={"a": 1}) == 1
    assert value("length", value="héllo") == 5
    with pytest.raises(InputValidationError) as caught:
        run("length", value=5)
    assert str(caught.value) == (
        "node 'length-node' (task 'length'): invalid input: "
        "field 'value': int 5 matches none of the allowed types (expected array or object or string)"
    )


# --- math ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"op": "add", "a": 2, "b": 3}, 5),
        ({"op": "sub", "a": 2, "b": 3.5}, -1.5),
        ({"op": "mul", "a": 4, "b": 3}, 12),
        ({"op": "div", "a": 6, "b": 4}, 1.5),
        ({"op": "sum", "values": [1, 2, 3.5]}, 6.5),
        ({"op": "sum", "values": []}, 0),
        ({"op": "min", "values": [4, -2, 9]}, -2),
        ({"op": "max", "a": 4, "b": 9}, 9),
    ],
)
def test_math(payload: dict[str, Any], expected: float) -> None:
    result = value("math", **payload)
    assert result == expected and type(result) is type(expected)


def test_math_division_by_zero_is_a_clear_error() -> None:
    with pytest.raises(TaskError) as caught:
        run("math", op="div", a=1, b=0)
    assert str(caught.value) == "math: division by zero (1 / 0)"
    with pytest.raises(TaskError, match=r"math: division by zero \(1.5 / 0.0\)"):
        run("math", op="div", a=1.5, b=0.0)


def test_math_errors() -> None:
    with pytest.raises(TaskError, match="math: 'add' needs both a and b; b not given"):
        run("math", op="add", a=1)
    with pytest.raises(TaskError, match="math: 'max' of no values"):
        run("math", op="max", values=[])
    with pytest.raises(TaskError, match="math: the result of 'mul' is inf, which is not a finite number"):
        run("math", op="mul", a=1e308, b=10)
    with pytest.raises(InputValidationError) as caught:
        run("math", op="pow", a=True, b="2")
    message = str(caught.value)
    assert "field 'op': Input should be 'add', 'sub', 'mul', 'div', 'min', 'max' or 'sum'" in message
    assert "field 'a': bool True matches none of the allowed types (expected integer or number or null)" in message
    assert "field 'b': str '2' matches none of the allowed types" in message


# --- compare -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("left", "op", "right", "expected"),
    [
        (1, "equals", 1.0, True),
        (True, "equals", 1, False),
        ([1, {"a": True}], "equals", [1, {"a": True}], True),
        ([1, {"a": True}], "equals", [1, {"a": 1}], False),
        (None, "equals", None, True),
        ("a", "not_equals", "b", True),
        (3, "gt", 2.5, True),
        (3, "gte", 3, True),
        ("apple", "lt", "banana", True),
        (2, "lte", 1, False),
        ("b", "in", ["a", "b"], True),
        (1, "in", [True], False),
        ("ell", "in", "hello", True),
        ("k", "in", {"k": 1}, True),
        ([1, 2], "contains", 2, True),
    ],
)
def test_compare_routes_true_or_false(left: Any, op: str, right: Any, expected: bool) -> None:
    label, result = run("compare", left=left, op=op, right=right)
    assert result is expected
    assert label == ("true" if expected else "false")


def test_compare_refuses_to_order_mixed_types() -> None:
    with pytest.raises(TaskError) as caught:
        run("compare", left="3", op="gt", right=2)
    assert str(caught.value) == (
        "compare: cannot order a text and a number with 'gt'; compare two numbers or two texts"
    )
    with pytest.raises(TaskError, match="got a number in a number"):
        run("compare", left=1, op="in", right=5)


# --- wait ----------------------------------------------------------------------------------------


def test_wait_sleeps_asynchronously_and_is_capped() -> None:
    assert value("wait", seconds=0) == 0
    assert value("wait", seconds=0.01) == 0.01
    with pytest.raises(InputValidationError, match="field 'seconds': Input should be less than or equal to 300"):
        run("wait", seconds=301)
    with pytest.raises(InputValidationError, match="greater than or equal to 0"):
        run("wait", seconds=-1)


# --- http_request against a local server ---------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    release = threading.Event()

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, val in (extra or {}).items():
            self.send_header(key, val)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data: Any) -> None:
        self._send(status, json.dumps(data).encode(), "application/json", {"X-Test": "yes"})

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        url = urlsplit(self.path)
        if url.path == "/json":
            self._json(200, {"query": parse_qs(url.query), "auth": self.headers.get("Authorization")})
        elif url.path == "/text":
            self._send(200, "plain café".encode(), "text/plain; charset=utf-8")
        elif url.path == "/missing":
            self._json(404, {"error": "not here"})
        elif url.path == "/big":
            self._send(200, b"x" * 5000, "text/plain")
        elif url.path == "/nan":
            self._send(200, b'{"x": NaN}', "application/json")
        elif url.path == "/redirect-to":
            self._send(302, b"", "text/plain", {"Location": parse_qs(url.query)["to"][0]})
        elif url.path == "/redirect":
            self._send(302, b"", "text/plain", {"Location": "/text"})
        elif url.path == "/slow":
            self.release.wait(10)
            self._send(200, b"late", "text/plain")
        else:
            self._json(400, {"path": url.path})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length).decode()
        self._json(201, {"method": "POST", "body": raw, "type": self.headers.get("Content-Type")})

    do_PUT = do_POST  # noqa: N815


@pytest.fixture(scope="module")
def local_server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        _Handler.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
def server(local_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The local server, with 127.0.0.1 explicitly allowed as an administrator would."""
    monkeypatch.setenv("TRELLIS_HTTP_ALLOWED_HOSTS", "127.0.0.1")
    return local_server


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "10.0.0.1", "169.254.169.254"])
def test_http_refuses_non_public_addresses_by_default(host: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRELLIS_HTTP_ALLOWED_HOSTS", raising=False)
    with pytest.raises(TaskError, match="non-public address .*TRELLIS_HTTP_ALLOWED_HOSTS"):
        run("http_request", url=f"http://{host}:9/anything", timeout=2)


def test_http_redirect_to_a_private_address_is_refused(local_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The first hop is allowed by name; the redirect goes to a host that is not.
    monkeypatch.setenv("TRELLIS_HTTP_ALLOWED_HOSTS", "127.0.0.1")
    port = local_server.rsplit(":", 1)[1]
    with pytest.raises(TaskError, match="'localhost' resolves to the non-public address"):
        run("http_request", url=f"{local_server}/redirect-to?to=http://localhost:{port}/text", follow_redirects=True)


def test_http_get_json_with_params_and_headers(server: str) -> None:
    response = value("http_request", url=f"{server}/json", params={"q": "trellis", "n": 2},
                     headers={"Authorization": "Bearer t"})
    assert response["status"] == 200 and response["ok"] is True
    assert response["json"] == {"query": {"q": ["trellis"], "n": ["2"]}, "auth": "Bearer t"}
    assert response["headers"]["x-test"] == "yes"
    assert response["headers"]["content-type"] == "application/json"
    assert json.loads(response["text"]) == response["json"]
    assert response["url"] == f"{server}/json?q=trellis&n=2"


def test_http_post_json_and_raw_body(server: str) -> None:
    sent = value("http_request", url=f"{server}/echo", method="POST", json={"a": [1, None]})
    assert sent["status"] == 201
    assert json.loads(sent["json"]["body"]) == {"a": [1, None]}
    assert sent["json"]["type"] == "application/json"
    raw = value("http_request", url=f"{server}/echo", method="PUT", body="hello",
                headers={"Content-Type": "text/plain"})
    assert raw["json"] == {"method": "POST", "body": "hello", "type": "text/plain"}


def test_http_text_responses_have_no_json(server: str) -> None:
    response = value("http_request", url=f"{server}/text")
    assert response["text"] == "plain café" and response["json"] is None


def test_http_error_status_is_a_result_unless_raise_for_status(server: str) -> None:
    response = value("http_request", url=f"{server}/missing")
    assert response["status"] == 404 and response["ok"] is False and response["json"] == {"error": "not here"}
    with pytest.raises(TaskError, match=r"http_request: GET .*/missing returned HTTP 404"):
        run("http_request", url=f"{server}/missing", raise_for_status=True)


def test_http_redirects_are_followed_only_when_asked(server: str) -> None:
    assert value("http_request", url=f"{server}/redirect")["status"] == 302
    followed = value("http_request", url=f"{server}/redirect", follow_redirects=True)
    assert followed["status"] == 200 and followed["url"] == f"{server}/text"


def test_http_response_size_is_capped(server: str) -> None:
    with pytest.raises(TaskError, match=r"http_request: GET .*/big returned more than 1000 bytes"):
        run("http_request", url=f"{server}/big", max_bytes=1000)


def test_http_non_finite_json_is_not_parsed(server: str) -> None:
    response = value("http_request", url=f"{server}/nan")
    assert response["json"] is None and response["text"] == '{"x": NaN}'


def test_http_timeout(server: str) -> None:
    with pytest.raises(TaskError, match=r"http_request: GET .*/slow timed out after 0.2 s"):
        run("http_request", url=f"{server}/slow", timeout=0.2)


def test_http_input_checks(server: str) -> None:
    with pytest.raises(InputValidationError, match="field 'timeout': Input should be less than or equal to 60"):
        run("http_request", url=f"{server}/json", timeout=600)
    with pytest.raises(InputValidationError, match="field 'method': Input should be 'GET'"):
        run("http_request", url=f"{server}/json", method="TRACE")
    with pytest.raises(TaskError, match="must be an absolute http:// or https:// address"):
        run("http_request", url="file:///etc/passwd")
    with pytest.raises(TaskError, match="give either 'json' or 'body', not both"):
        run("http_request", url=f"{server}/echo", method="POST", json={}, body="x")


def test_http_connection_failure_is_a_task_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRELLIS_HTTP_ALLOWED_HOSTS", "127.0.0.1")
    # Port 9 (discard) is not served on the loopback here; the connection is refused at once.
    with pytest.raises(TaskError, match=r"http_request: GET http://127.0.0.1:9/ failed: ConnectError"):
        run("http_request", url="http://127.0.0.1:9/", timeout=5)


# --- end to end: builder + built-ins + the real engine -------------------------------------------


def test_builtins_run_in_a_built_workflow_on_the_engine() -> None:
    graph = WorkflowBuilder(
        id="orders-report",
        input_schema={"type": "object", "properties": {"customer": {"type": "string"}}, "required": ["customer"]},
        state_schema={"type": "object", "properties": {
            "orders": {"type": "array", "items": {"type": "object", "properties": {"amount": {"type": "number"}}}},
            "big": {"type": "array", "items": {"type": "number"}, "default": []},
            "total": {"type": "number"},
            "message": {"type": "string"},
        }},
    )
    load = graph.use("set_value", id="load", input=[{"target": "value", "value": [
        {"amount": 5}, {"amount": 12.5}, {"amount": 30},
    ]}], output=[{"target": "orders"}])
    orders = graph.foreach(id="orders.each", over=state_path("orders"), as_="order")
    check = graph.use("compare", id="is_big", input=[
        {"target": "left", "path": orders.item.child("amount")},
        {"target": "op", "value": "gt"},
        {"target": "right", "value": 10},
    ])
    keep = graph.use("set_value", id="keep", input=[{"target": "value", "path": orders.item.child("amount")}],
                     output=[{"target": "big", "mode": "append"}])
    total = graph.use("transform", id="total", input=[
        {"target": "expression", "value": "sum(orders[].amount)"},
        {"target": "data", "path": "state"},
    ], output=[{"target": "total"}])
    message = graph.use("template", id="message", input=[
        {"target": "template", "value": "{who}: {n} big orders, {total:.2f} in all"},
        {"target": "values.who", "path": "input.customer"},
        {"target": "values.n", "value": 2},
        {"target": "values.total", "path": "state.total"},
    ], output=[{"target": "message"}])
    graph.chain(load, "ok", orders, "loop", check, "true", keep, "ok", orders, "done", total, "ok", message)
    graph.set_route(check, "false", orders)
    graph.output("message", "state.message")
    graph.output("big", "state.big")

    with Engine(registry=builtin_registry(), options=EngineOptions(max_workers=2)) as engine:
        result = engine.run(graph.build(), {"customer": "Ada"})
    assert result.status == "completed", result.error
    assert result.output == {"message": "Ada: 2 big orders, 47.50 in all", "big": [12.5, 30]}
    assert result.state["total"] == 47.5
