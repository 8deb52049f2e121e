"""Where the editor's time goes at scale (issue 34): a Chromium performance trace of the three things
``bench_editor_scale`` times (the canvas drawn and fitted, the toolbar's Lay out until "Saved", a 50 px drag until
"Saved"), each summarised as the main thread's self time by trace event (script, style, layout, paint, GC...) and
the JavaScript functions with the most sampled self time.

    .venv/bin/python -m bench.profile_editor_scale            # 600 nodes, this tree
    TRELLIS_BENCH_SIZES=300 .venv/bin/python -m bench.profile_editor_scale

``TRELLIS_PROFILE_OUT=<dir>`` also keeps each phase's raw trace (JSON, opens in Chrome's Performance panel).
For readable function names build the front end unminified first: ``npx vite build --minify false``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench.bench_editor_scale import (
    _WATCH_CANVAS,
    _WATCH_SAVE,
    CHROMIUM,
    CHROMIUM_ARGS,
    REPO,
    SIZES,
    VIEWPORT,
    Side,
    drag_50px,
    warm,
)

CATEGORIES = ",".join([
    "devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute", "blink.user_timing",
    "disabled-by-default-v8.cpu_profiler", "loading", "v8", "blink",
])
# Trace events summarised by self time (what runs under them is counted under its own name).
SHOWN = 14


def _main_thread(events: list[dict[str, Any]]) -> tuple[int, int] | None:
    names = {(e["pid"], e["tid"]): e["args"].get("name") for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    mains = [key for key, name in names.items() if name == "CrRendererMain"]
    if not mains:
        return None
    # The renderer that did the most work is the page's.
    busy = Counter((e["pid"], e["tid"]) for e in events if e.get("ph") == "X" and (e["pid"], e["tid"]) in mains)
    return busy.most_common(1)[0][0] if busy else mains[0]


def self_times(events: list[dict[str, Any]], thread: tuple[int, int]) -> Counter[str]:
    """Self time (ms) per trace event name on one thread: an event's duration less its nested events'."""
    spans = sorted((e for e in events if e.get("ph") == "X" and (e["pid"], e["tid"]) == thread and "dur" in e),
                   key=lambda e: (e["ts"], -e["dur"]))
    totals: Counter[str] = Counter()
    stack: list[tuple[float, str]] = []  # (end, name) of the events open at this point
    for event in spans:
        start, end = event["ts"], event["ts"] + event["dur"]
        while stack and stack[-1][0] <= start:
            stack.pop()
        totals[event["name"]] += event["dur"] / 1000
        if stack:
            totals[stack[-1][1]] -= event["dur"] / 1000
        stack.append((end, event["name"]))
    return totals


def sampled_functions(events: list[dict[str, Any]]) -> tuple[Counter[str], float]:
    """Self time (ms) per JavaScript function from the trace's CPU profile chunks."""
    nodes: dict[tuple[Any, int], str] = {}
    self_ms: Counter[str] = Counter()
    total = 0.0
    for event in events:
        if event.get("name") not in ("Profile", "ProfileChunk"):
            continue
        data = event.get("args", {}).get("data", {})
        profile = data.get("cpuProfile", {})
        key = event.get("id")
        for node in profile.get("nodes", []):
            frame = node.get("callFrame", {})
            url = frame.get("url", "").rsplit("/", 1)[-1]
            label = f"{frame.get('functionName') or '(anonymous)'} {url}:{frame.get('lineNumber', -1) + 1}"
            nodes[(key, node["id"])] = label if url else frame.get("functionName") or "(program)"
        for sample, delta in zip(profile.get("samples", []), data.get("timeDeltas", []), strict=False):
            ms = max(delta, 0) / 1000
            self_ms[nodes.get((key, sample), "?")] += ms
            total += ms
    return self_ms, total


def summarise(phase: str, trace: bytes, out: Path | None) -> None:
    if out is not None:
        (out / f"{phase}.json").write_bytes(trace)
    loaded = json.loads(trace)
    events = loaded["traceEvents"] if isinstance(loaded, dict) else loaded
    thread = _main_thread(events)
    print(f"\n== {phase}")
    if thread is None:
        print("  no renderer main thread in the trace")
        return
    times = self_times(events, thread)
    busy = sum(times.values())
    print(f"  main thread busy {busy:,.0f} ms; self time by trace event:")
    for name, ms in times.most_common(SHOWN):
        print(f"    {ms:8.1f} ms  {name}")
    functions, sampled = sampled_functions(events)
    print(f"  JavaScript sampled {sampled:,.0f} ms; self time by function:")
    for name, ms in functions.most_common(SHOWN):
        print(f"    {ms:8.1f} ms  {name}")


def profile(browser: Any, side: Side, size: int, out: Path | None) -> None:
    warm(side, size)  # resets the workflow to its imported document first
    context = browser.new_context(viewport=VIEWPORT)
    context.add_cookies([{"name": "sessionid", "value": side.session, "url": side.base_url}])
    page = context.new_page()
    page.goto("about:blank")
    browser.start_tracing(page=page, categories=CATEGORIES.split(","))
    page.goto(side.urls[size], wait_until="commit")
    page.wait_for_function(_WATCH_CANVAS, arg=size + 2, polling="raf", timeout=120_000)
    summarise(f"canvas-{size}", browser.stop_tracing(), out)
    page.wait_for_function("() => document.querySelector('[data-editor-canvas]').dataset.state === 'saved'")
    page.wait_for_function("() => document.querySelector('.htmx-request') === null")
    revision = int(page.locator("[data-editor-canvas]").get_attribute("data-revision") or 0)
    page.evaluate(_WATCH_SAVE, revision)
    browser.start_tracing(page=page, categories=CATEGORIES.split(","))
    page.get_by_role("button", name="Layout", exact=True).click()
    page.wait_for_function("() => window.__save", timeout=60_000)
    summarise(f"layout-{size}", browser.stop_tracing(), out)
    page.wait_for_timeout(400)
    page.wait_for_function("() => document.querySelector('.htmx-request') === null")
    revision = int(page.locator("[data-editor-canvas]").get_attribute("data-revision") or 0)
    box = page.locator('.react-flow__node[data-id="line_000"] .wf-node__title').bounding_box()
    assert box, "line_000 is not drawn"
    page.evaluate(_WATCH_SAVE, revision)
    drag_50px(page, box)
    browser.start_tracing(page=page, categories=CATEGORIES.split(","))
    page.mouse.up()
    page.wait_for_function("() => window.__save", timeout=60_000)
    summarise(f"drag-{size}", browser.stop_tracing(), out)
    context.close()


def main() -> int:
    from playwright.sync_api import sync_playwright

    out = Path(os.environ["TRELLIS_PROFILE_OUT"]) if os.environ.get("TRELLIS_PROFILE_OUT") else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    sizes = SIZES if os.environ.get("TRELLIS_BENCH_SIZES") else [600]
    with tempfile.TemporaryDirectory(prefix="trellis-profile-editor-") as tmp:
        side = Side("this", REPO, Path(tmp))
        try:
            side.prepare()
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                for size in sizes:
                    profile(browser, side, size, out)
                browser.close()
        finally:
            side.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
