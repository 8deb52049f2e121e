"""The JSON values inside a workflow document (schemas, metadata, literals) are read-only, yet read, copy,
pickle, dump and validate against like the plain dicts and lists they were before."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest

from runtime import Workflow, WorkflowBuilder
from runtime._document_json import FrozenDict, FrozenList, freeze, thaw
from runtime.document import document_json_schema
from tests.runtime.document_support import containers, plain_twin

SCHEMA = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}},
                                           "n": {"type": ["integer", "null"], "default": 3}},
          "required": ["tags"]}


def document() -> Workflow:
    """One document with every JSON-valued field holding nested objects and arrays."""
    return Workflow.model_validate({
        "id": "w", "input_schema": SCHEMA, "state_schema": SCHEMA,
        "metadata": {"positions": {"t": {"x": 1, "y": 2}}, "tags": ["a"]},
        "nodes": [
            {"kind": "task", "id": "t", "task": "echo",
             "input": [{"target": "value", "value": {"items": [1, {"deep": [2]}]}}]},
            {"kind": "branch", "id": "b", "path": "state.n", "cases": [{"label": "in", "op": "in", "value": [1, [2]]}]},
            {"kind": "interrupt", "id": "i", "resume_schema": SCHEMA},
        ],
        "routes": [{"source": "t", "label": "ok", "target": "b"}, {"source": "b", "label": "in", "target": "i"}],
    })


def json_fields(doc: Workflow) -> dict[str, Any]:
    """Every JSON-valued field of ``doc`` by a readable name."""
    task, branch, interrupt = doc.nodes
    return {"input_schema": doc.input_schema, "state_schema": doc.state_schema, "metadata": doc.metadata,
            "binding value": task.input[0].value, "case value": branch.cases[0].value,  # type: ignore[union-attr]
            "resume_schema": interrupt.resume_schema}  # type: ignore[union-attr]


DICT_CHANGES: dict[str, Callable[[Any], object]] = {
    "set": lambda d: d.__setitem__("k", 1), "delete": lambda d: d.__delitem__(next(iter(d))),
    "update": lambda d: d.update(k=1), "|=": lambda d: d.__ior__({"k": 1}), "setdefault": lambda d: d.setdefault("k"),
    "pop": lambda d: d.pop(next(iter(d))), "popitem": lambda d: d.popitem(), "clear": lambda d: d.clear(),
}
LIST_CHANGES: dict[str, Callable[[Any], object]] = {
    "set": lambda v: v.__setitem__(0, 1), "set slice": lambda v: v.__setitem__(slice(0, 1), [1]),
    "delete": lambda v: v.__delitem__(0), "append": lambda v: v.append(1), "extend": lambda v: v.extend([1]),
    "+=": lambda v: v.__iadd__([1]), "*=": lambda v: v.__imul__(2), "insert": lambda v: v.insert(0, 1),
    "pop": lambda v: v.pop(), "remove": lambda v: v.remove(v[0]), "clear": lambda v: v.clear(),
    "sort": lambda v: v.sort(), "reverse": lambda v: v.reverse(),
}


#: Methods of dict and list that leave the object as it is (``__init__`` refills it only when called again on
#: purpose, like ``dict.__setitem__(value, ...)``: a deliberate bypass, not an accident this guards against).
KEEPS = {"__class__", "__class_getitem__", "__contains__", "__delattr__", "__dir__", "__eq__", "__format__", "__ge__",
         "__getattribute__", "__getitem__", "__getstate__", "__gt__", "__init__", "__init_subclass__", "__iter__",
         "__le__", "__len__", "__lt__", "__ne__", "__new__", "__or__", "__ror__", "__add__", "__mul__", "__rmul__",
         "__reduce__", "__reduce_ex__", "__repr__", "__reversed__", "__setattr__", "__sizeof__", "__str__",
         "__subclasshook__", "copy", "fromkeys", "get", "items", "keys", "values", "count", "index"}


@pytest.mark.parametrize(("base", "frozen"), [(dict, FrozenDict), (list, FrozenList)])
def test_every_method_that_could_change_the_base_type_is_overridden(base: type, frozen: type) -> None:
    # A Python that adds a mutator to dict or list fails here until the read-only type refuses it too (what each
    # refusal does is tested above, one change per mutator).
    mutators = {name for name in dir(base) if callable(getattr(base, name))} - KEEPS
    assert mutators and {name for name in mutators if getattr(frozen, name) is getattr(base, name)} == set()


def assert_read_only(container: Any) -> None:
    before = thaw(container)
    changes = DICT_CHANGES if isinstance(container, dict) else LIST_CHANGES
    for name, change in changes.items():
        with pytest.raises(TypeError, match=r"immutable.*model_copy\(update=\.\.\.\)"):
            change(container)
        assert container == before, name


@pytest.mark.parametrize("field", list(json_fields(document())))
def test_every_json_field_and_everything_in_it_refuses_every_change(field: str) -> None:
    value = json_fields(document())[field]
    found = list(containers(value))
    assert len(found) >= 2  # the field and something nested in it
    for container in found:
        assert type(container) in (FrozenDict, FrozenList)
        assert_read_only(container)


def test_the_error_says_what_to_do_instead() -> None:
    with pytest.raises(TypeError) as caught:
        document().input_schema["required"].append("n")
    assert str(caught.value) == (
        "cannot append to this array: a workflow document and the JSON values in it are immutable (Engine.compile "
        "caches a plan per document): derive a changed document with model_copy(update=...), or change a copy "
        "(copy.deepcopy(value) is an ordinary dict/list)")


# --- copies, pickle, JSON -------------------------------------------------------------------------


def test_copies_of_a_json_value_are_ordinary_values_the_caller_owns() -> None:
    schema = document().input_schema
    shallow = copy.copy(schema)
    assert type(shallow) is dict and shallow == schema and shallow["properties"] is schema["properties"]
    held: Any = schema  # a Mapping to type checkers; at run time the dict's own copy() works as ever
    assert type(held.copy()) is dict and type(schema["required"].copy()) is list
    deep = copy.deepcopy(schema)
    assert deep == schema and all(type(c) in (dict, list) for c in containers(deep))
    deep["required"].append("n")
    deep["properties"]["tags"]["items"]["type"] = "integer"
    assert schema == SCHEMA  # the document's own is untouched
    assert type(copy.copy(schema["required"])) is list and copy.deepcopy(schema["required"]) == ["tags"]


def test_a_deep_copy_of_a_document_is_a_document_sharing_its_read_only_values() -> None:
    doc = document()
    copied = copy.deepcopy(doc)
    assert copied == doc and copied is not doc
    assert copied.input_schema is doc.input_schema
    assert copied.nodes[0].input[0].value is doc.nodes[0].input[0].value  # type: ignore[union-attr]
    assert doc.model_copy(deep=True).metadata is doc.metadata


def test_pickle_round_trips_to_the_read_only_types() -> None:
    doc = document()
    again = pickle.loads(pickle.dumps(doc))
    assert again == doc
    assert all(type(c) in (FrozenDict, FrozenList) for v in json_fields(again).values() for c in containers(v))
    value = pickle.loads(pickle.dumps(doc.metadata))
    assert type(value) is FrozenDict and type(value["tags"]) is FrozenList and value == doc.metadata


def test_json_and_the_dumps_read_them_as_plain_objects_and_arrays() -> None:
    doc = document()
    plain = {name: thaw(value) for name, value in json_fields(doc).items()}
    assert json.dumps(json_fields(doc)) == json.dumps(plain)
    assert repr(doc.input_schema) == repr(SCHEMA)
    dumped = doc.model_dump()
    assert all(type(c) in (dict, list) for c in containers(dumped))  # dumps hand out ordinary values


def test_model_copy_holds_an_update_as_read_only_json() -> None:
    doc = document()
    metadata = {"positions": {"t": {"x": 5}}}
    changed = doc.model_copy(update={"metadata": metadata})
    assert type(changed.metadata) is FrozenDict and type(changed.metadata["positions"]["t"]) is FrozenDict
    metadata["positions"]["t"]["x"] = 6  # the caller's dict is not the document's
    assert changed.metadata == {"positions": {"t": {"x": 5}}}
    with pytest.raises(ValueError, match=r"the value\['x'\] is nan"):
        doc.model_copy(update={"metadata": {"x": float("nan")}})


def test_freeze_refuses_what_is_not_json_naming_where() -> None:
    with pytest.raises(ValueError, match=r"the value\['a'\]\[1\] is a set"):
        freeze({"a": [1, {2}]})
    with pytest.raises(ValueError, match="non-string key 1"):
        freeze({"a": {1: 2}})
    assert freeze([1, "x", None, 2.5, True]) == [1, "x", None, 2.5, True]
    assert freeze(frozen := freeze({"a": [1]})) is frozen  # already read-only: taken as it is


# --- schemas -----------------------------------------------------------------------------------------


def test_jsonschema_validates_with_a_read_only_schema_and_read_only_values() -> None:
    doc = document()
    validator = jsonschema.Draft202012Validator(doc.input_schema)
    assert validator.is_valid({"tags": ["a"], "n": None})
    assert [e.message for e in validator.iter_errors({"tags": [1]})] == ["1 is not of type 'string'"]
    # A read-only array is still an array, a read-only object still an object (literals are checked this way).
    assert validator.is_valid(freeze({"tags": ["a", "b"]}))
    assert not validator.is_valid(freeze({"tags": {"a": 1}}))
    jsonschema.validate(doc.model_dump(mode="json"), document_json_schema())


def test_dumps_of_a_document_are_byte_identical_to_its_twin_holding_plain_values() -> None:
    # The twin is the document as it was before its values were frozen: the same models holding plain dicts
    # and lists. Every dump must be the same bytes.
    graph = WorkflowBuilder("hello", "Hello", input_schema=SCHEMA, state_schema=SCHEMA)
    graph.use("set_value", id="greet", input=[{"target": "value", "value": {"a": [1, 2.5, None, {"b": "é"}]}}],
              output=[{"source": ".", "target": "greeting"}])
    for doc in (graph.build(), document()):
        twin = plain_twin(doc)
        assert type(doc.input_schema["properties"]) is FrozenDict and type(twin.input_schema["properties"]) is dict
        assert doc.model_dump_json() == twin.model_dump_json()
        assert doc.model_dump_json(indent=2) == twin.model_dump_json(indent=2)
        assert json.dumps(doc.model_dump(mode="json")) == json.dumps(twin.model_dump(mode="json"))
