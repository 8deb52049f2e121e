"""The documents a worker's runs execute, parsed once and compiled once per worker process (issue 33).

The executor makes an engine per run (its checkpointer, secrets and budget are the run's), so the engine's own
compile cache never saw a document twice: each run of the same document parsed, validated and compiled it again,
about 1.7 ms of a one-step run's worker CPU. Here a run's document becomes one frozen ``Workflow`` object per
distinct (team, subgraph pins, document text), and every engine is handed the same ``runtime.CompileCache`` for
the same registry and retry cap, so the plan is made by the first run and found by identity by the next.

What makes a cached plan right for a run is in its key: the document's exact text (a draft edited, a new version
published: other text, another object, another compile), its team and its pinned subgraph versions (what the
analysis resolves; a published version never changes), and, for the shared cache, the registry object and the
retry cap it validated with. Both caches are bounded: the oldest entry goes first.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any

import pydantic_core

from runtime import Workflow
from runtime.engine import CompileCache
from runtime.tasks import TaskRegistry

#: Distinct documents (and plans per registry) a worker process keeps.
LIMIT = 128

_lock = threading.Lock()
_documents: OrderedDict[tuple[int, str, bytes], Workflow] = OrderedDict()
#: (registry's id, retry cap) -> (the registry, its cache): the entry holds the registry, so the id stays its.
_caches: dict[tuple[int, float | None], tuple[TaskRegistry, CompileCache]] = {}


def document(team_id: int, data: Any, pins: dict[str, int] | None) -> Workflow | Any:
    """The run's document as the ``Workflow`` object every run of the same one shares; ``data`` itself when it
    is not a valid document (the engine then refuses it as it always has)."""
    try:
        text = pydantic_core.to_json(data, inf_nan_mode="constants")  # NaN is not null here
    except pydantic_core.PydanticSerializationError:
        return data
    key = (team_id, pydantic_core.to_json(pins or {}).decode(), hashlib.sha256(text).digest())
    found = _documents.get(key)
    if found is not None:
        return found
    try:
        parsed = Workflow.model_validate(data)
    except ValueError:
        return data
    with _lock:
        found = _documents.setdefault(key, parsed)
        _documents.move_to_end(key)
        while len(_documents) > LIMIT:
            _documents.popitem(last=False)
    return found


def compiled(registry: TaskRegistry, max_retry_delay: float | None) -> CompileCache:
    """The compile cache of engines with this registry and retry cap."""
    key = (id(registry), max_retry_delay)
    found = _caches.get(key)
    if found is not None and found[0] is registry:
        return found[1]
    with _lock:
        found = _caches.get(key)
        if found is None or found[0] is not registry:
            if len(_caches) >= 8:  # registries are rebuilt only by tests that change the task modules
                _caches.clear()
            found = _caches[key] = (registry, CompileCache(LIMIT))
    return found[1]
