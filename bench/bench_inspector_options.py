"""The inspector at scale: what it sends for the workflow settings (with the page and after every canvas save) and
for a node, this tree beside a base commit (default: ``main``), on bench_editor_scale's workloads (N ``template``
nodes inside customers -> orders, each writing a state field), in one run.

Each side is its own tree, database and ``manage.py serve`` (bench_editor_scale.Side; the base tree is a ``git
archive`` of the commit, with no front end built: only server answers are read). Per size and side, in turns:

- settings: the inspector's settings panel (``GET .../edit/inspector/`` as htmx asks for it): bytes and the time
  from sending the request to the end of the answer, on a new connection to the warmed server;
- node: a node's panel (the middle node of the chain), the same way;
- and on this tree, what moved out of them: the long pickers' options, asked for when a person reaches for one
  (``.../edit/picker-options/?picker=start``, ``output-path`` and ``state-field``), and the node's data panel's
  state fields, asked for when the folded State group is opened (``.../edit/data-tree/?under=state``), bytes and
  time each.

Timings are printed with the load average, never asserted. ``TRELLIS_BENCH_SIZES`` picks sizes (default
100,300,600), ``TRELLIS_BENCH_BASE`` the base commit (empty: this tree only), ``TRELLIS_BENCH_ROUNDS`` the rounds
(median; default 7).

    make bench BENCH=inspector_options
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("TRELLIS_BENCH_SIZES", "100,300,600")

from bench import bench_editor_scale as scale  # noqa: E402  (reads the sizes when imported)
from bench.bench_engine import table  # noqa: E402

BASE = os.environ.get("TRELLIS_BENCH_BASE", "main")
ROUNDS = int(os.environ.get("TRELLIS_BENCH_ROUNDS", "7"))
PICKERS = ("start", "output-path", "state-field")
#: What is sent when a person reaches for it: the long pickers' options, and the node's data panel's state fields.
ON_DEMAND = (*PICKERS, "state-tree")


@contextmanager
def archived(commit: str, into: Path) -> Iterator[Path]:
    archive = subprocess.run(["git", "-C", str(scale.REPO), "archive", "--format=tar", commit], capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"cannot read {commit!r} ({archive.stderr.decode().strip()}); set TRELLIS_BENCH_BASE")
    into.mkdir()
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    yield into


def fetch(side: scale.Side, url: str) -> tuple[int, float]:
    """Bytes and ms of one GET as htmx sends it, on a connection of its own."""
    request = urllib.request.Request(url, headers={"Cookie": f"sessionid={side.session}", "Connection": "close",
                                                   "HX-Request": "true"})
    began = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as answer:
        body = answer.read()
    return len(body), (time.perf_counter() - began) * 1000


def warm(side: scale.Side, size: int) -> None:
    """The document reset to its import at a new revision, and each server process's analysis of it cached, as
    bench_editor_scale.warm does (each request on a new connection reaches whichever process accepts it)."""
    side.reset(size)
    for _ in range(scale.WARM_REQUESTS):
        fetch(side, f"{side.urls[size]}inspector/")


def measure(side: scale.Side, size: int, this: bool) -> dict[str, float]:
    warm(side, size)
    found: dict[str, float] = {}
    found["settings_bytes"], found["settings_ms"] = fetch(side, f"{side.urls[size]}inspector/")
    found["node_bytes"], found["node_ms"] = fetch(side, f"{side.urls[size]}inspector/?node=line_{size // 2:03d}")
    if this:
        for picker in PICKERS:
            found[f"{picker}_bytes"], found[f"{picker}_ms"] = fetch(
                side, f"{side.urls[size]}picker-options/?picker={picker}")
        found["state-tree_bytes"], found["state-tree_ms"] = fetch(
            side, f"{side.urls[size]}data-tree/?node=line_{size // 2:03d}&under=state")
    return found


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="trellis-bench-inspector-") as tmp:
        data = Path(tmp)
        this = scale.Side("this", scale.REPO, data)
        sides = [this]
        stack = []
        if BASE:
            stack.append(archived(BASE, data / "base"))
            sides.insert(0, scale.Side(f"base {BASE}", stack[0].__enter__(), data))
        results: dict[tuple[str, int], dict[str, float]] = {}
        loads: list[tuple[float, float, float]] = []
        try:
            for side in sides:
                side.prepare()
                measure(side, scale.SIZES[0], side is this)  # not measured: imports, template compilation
            for size in scale.SIZES:
                runs: dict[str, list[dict[str, float]]] = {side.name: [] for side in sides}
                for _ in range(ROUNDS):
                    for side in sides:
                        runs[side.name].append(measure(side, size, side is this))
                    loads.append(os.getloadavg())
                for side in sides:
                    found = runs[side.name]
                    results[(side.name, size)] = {key: statistics.median(r[key] for r in found) for key in found[0]}
                print(f"  measured {size} nodes", flush=True)
        finally:
            for side in sides:
                side.stop()
            for entered in stack:
                entered.__exit__(None, None, None)
    rows = []
    for size in scale.SIZES:
        for side in sides:
            r = results[(side.name, size)]
            moved = " · ".join(f"{picker} {r[f'{picker}_bytes'] / 1024:,.1f} KB {r[f'{picker}_ms']:,.1f} ms"
                               for picker in ON_DEMAND) if side is this else "-"
            rows.append([str(size), side.name, f"{r['settings_bytes'] / 1024:,.1f}", f"{r['settings_ms']:,.1f}",
                         f"{r['node_bytes'] / 1024:,.1f}", f"{r['node_ms']:,.1f}", moved])
    low, high = min(load[0] for load in loads), max(load[0] for load in loads)
    table("The inspector: N template nodes inside customers -> orders (server answers)",
          ["nodes", "tree", "settings KB", "settings ms", "node KB", "node ms",
           "on demand: KB and ms (when a picker or the data panel's state is opened)"],
          rows, f"Median of {ROUNDS} rounds, the trees taking turns, each request on a new connection to a warmed "
          f"server. 1-minute load average during the run: {low:.1f} to {high:.1f} ({os.cpu_count()} cores).")
    return 0
