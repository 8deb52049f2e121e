"""``EngineOptions``: one frozen, documented value for everything an engine is told besides its registry."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from runtime import Engine
from runtime._options import FIELDS
from runtime.engine import CompileCache, EngineOptions, MappingResolver
from runtime.errors import EngineOptionsError, WorkflowError
from runtime.state import SequentialIds, parse_run_state
from runtime.tasks import builtin_registry
from tests.runtime.engine_helpers import registry
from tests.runtime.test_engine_interrupt import approval
from tests.runtime.test_engine_subgraph import caller, child


def test_every_field_is_described_in_the_docstring() -> None:
    doc = EngineOptions.__doc__ or ""
    # A field is described where its bullet opens: ``name`` or, for a hook, ``name(arguments)``.
    assert [name for name in FIELDS if f"* ``{name}``" not in doc and f"* ``{name}(" not in doc] == []


def test_the_options_are_frozen_and_slotted() -> None:
    options = EngineOptions(max_steps=5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.max_steps = 6  # type: ignore[misc]
    assert not hasattr(options, "__dict__")
    assert dataclasses.replace(options, keep_trace=0) == EngineOptions(max_steps=5, keep_trace=0)


@pytest.mark.parametrize(("field", "value"), [
    ("max_workers", 0), ("max_depth", 0), ("max_depth", None), ("max_steps", 0), ("max_steps", 1.5),
    ("keep_trace", -1), ("keep_trace", True), ("max_result_bytes", 0), ("step_timeout", 0),
    ("step_timeout", float("nan")), ("max_retry_delay", -1), ("max_retry_delay", "60"),
    ("sleep_in_process", "no"), ("clock", 3.0), ("should_cancel", "yes"), ("budget", {"deadline": 1}),
    ("secrets", ["api_key"]), ("compiled", {}),
])
def test_a_bad_value_is_refused_naming_its_field(field: str, value: Any) -> None:
    with pytest.raises(EngineOptionsError) as caught:
        EngineOptions(**{field: value})
    error = caught.value
    assert isinstance(error, WorkflowError) and isinstance(error, ValueError)
    assert error.field == field and f"EngineOptions.{field} must be" in error.message
    assert error.to_dict()["code"] == "engine.invalid_option" and error.to_dict()["field"] == field


def test_the_engine_takes_options_and_refuses_the_old_keywords() -> None:
    with pytest.raises(EngineOptionsError, match="EngineOptions") as caught:
        Engine(builtin_registry(), {"max_steps": 3})  # type: ignore[arg-type]
    assert caught.value.field == "options"
    with pytest.raises(TypeError):
        Engine(builtin_registry(), max_steps=3)  # type: ignore[call-arg]


def test_the_options_given_are_the_ones_the_engine_runs_with() -> None:
    options = EngineOptions(workflows=MappingResolver({"child": child()}), ids=SequentialIds(), keep_trace=2)
    engine = Engine(registry(), options)
    assert engine.options is options
    result = engine.run(caller(), {"n": 4})
    assert result.status == "completed", result.error
    assert result.run_id == "run_0000000000001" and len(result.trace) == 2 and result.trace_omitted > 0


def test_a_parsed_state_is_used_by_one_call_and_any_other_is_copied() -> None:
    doc = approval()
    eng = Engine(registry(), EngineOptions(ids=SequentialIds()))
    paused = eng.run(doc, {"amounts": [10]})
    interrupt_id = paused.interrupts[0].interrupt_id
    before = paused.run_state.model_dump_json()
    assert eng.resume(paused.run_state, interrupt_id, {"approved": True}, workflow=doc).status == "completed"
    assert paused.run_state.model_dump_json() == before  # the caller's object stays as it was
    parsed = parse_run_state(before)
    done = eng.resume(parsed, interrupt_id, {"approved": True}, workflow=doc)
    assert done.status == "completed" and done.run_state is parsed  # handed over: worked on in place, no copy
    # Used up by that call: a second call with the same object works on a copy and leaves it as it is.
    finished = parsed.model_dump_json()
    again = eng.continue_run(parsed, workflow=doc)
    assert again.run_state is not parsed and parsed.model_dump_json() == finished


def test_engines_given_one_compile_cache_compile_a_document_once() -> None:
    """A host that makes an engine per run hands each the same cache: the second engine finds the first's plan
    for the same document object; another document object (a new version) is compiled for itself."""
    shared = CompileCache(limit=2)
    document, newer = child(), child()
    first = Engine(registry(), EngineOptions(compiled=shared)).compile(document)
    assert Engine(registry(), EngineOptions(compiled=shared)).compile(document) is first
    assert Engine(registry(), EngineOptions(compiled=shared)).compile(newer) is not first
    assert Engine(registry()).compile(document) is not first  # an engine's own cache is its own
    assert len(shared) == 2
    Engine(registry(), EngineOptions(compiled=shared)).compile(child())
    assert len(shared) == 2 and shared.get(document) is None  # bounded: the oldest went first
    with pytest.raises(ValueError, match="limit"):
        CompileCache(limit=0)
