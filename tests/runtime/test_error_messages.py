"""A failed node's error always says something: the node, the item and a reason, even when the task raised an
exception without a message."""

from __future__ import annotations

from runtime import Engine, WorkflowBuilder
from runtime.tasks import TaskRegistry

ITEMS = {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "integer"}}}, "required": ["xs"]}


def test_an_exception_without_a_message_still_gives_a_message_naming_node_and_item() -> None:
    reg = TaskRegistry()

    @reg.task
    def silent(x: int) -> int:
        if x == 2:
            raise RuntimeError()
        return x

    graph = WorkflowBuilder("silent", input_schema=ITEMS)
    each = graph.foreach("each", "input.xs", as_="x")
    body = graph.use("silent", id="work", input=[{"target": "x", "path": each.item}])
    graph.chain(each, "loop", body, "ok", each)
    result = Engine(reg).run(graph.build(), {"xs": [0, 1, 2]})
    assert result.status == "failed" and result.error is not None
    message = result.error.message
    assert "node 'work'" in message and "item 2" in message, message
    assert message.endswith("RuntimeError: RuntimeError was raised without a message"), message
    assert result.error.details["cause"]["message"] == "RuntimeError was raised without a message"
