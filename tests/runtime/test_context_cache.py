"""The engine derives contexts incrementally (a per-frame cache of foreach entries); it must match a fresh walk."""

from __future__ import annotations

import pytest

from runtime._state import EntryCache, foreach_entries, runtime_context
from runtime.errors import CorruptRunStateError
from tests.runtime.engine_helpers import CUSTOMERS, engine, nested_capture


@pytest.mark.parametrize("order", ["inner_first", "outer_first"])
def test_cached_entries_equal_a_fresh_walk_for_every_live_frame(order: str) -> None:
    paused = engine().run(nested_capture(inner_concurrency=2, outer_concurrency=2, interrupt=True),
                          {"customers": CUSTOMERS})
    rs = paused.run_state
    frame_ids = list(rs.frames)
    if order == "inner_first":
        frame_ids.reverse()
    cache: EntryCache = {}
    for frame_id in frame_ids * 2:  # the second pass is served from the cache
        assert foreach_entries(rs, frame_id, cache=cache) == foreach_entries(rs, frame_id)
        assert runtime_context(rs, frame_id, cache=cache) == runtime_context(rs, frame_id)
    assert set(cache) == set(rs.frames)
    assert max(len(entries) for _, entries in cache.values()) == 2


def test_a_cached_entry_for_a_replaced_frame_object_is_not_used() -> None:
    paused = engine().run(nested_capture(interrupt=True), {"customers": CUSTOMERS})
    rs = paused.run_state
    inner = paused.interrupts[0].frame_id
    cache: EntryCache = {}
    foreach_entries(rs, inner, cache=cache)
    rs.frames[inner] = rs.frames[inner].model_copy(update={"parent_frame_id": "frame_missing"})
    with pytest.raises(CorruptRunStateError):
        foreach_entries(rs, inner, cache=cache)
