"""The editor at scale (issue 34): 20 / 100 / 300 / 600 ``template`` nodes inside customers -> orders, measured
in headless Chromium against ``manage.py serve`` (gunicorn, what ``make run`` starts), this tree beside a base
commit (default: 143ebe8, main's first editor-at-scale work with live co-editing, before the in-view drawing),
in one run.

Each side gets its own copy of the code (the base: ``git archive`` into a temporary folder, its front end built
there with ``npm ci`` + Vite), its own SQLite database and server; the two alternate size by size. Per size:

- page: the editor page's HTML (bytes) and its server time (the navigation's request start to response start);
- canvas: from navigation start until the first fit, and until after it the canvas is complete: the minimap shows
  every node and every node in view is drawn and measured (from 80 nodes the canvas draws only those; the base
  drew every node), with how many nodes the page holds then;
- drag: a 50 px drag of a node until the toolbar says "Saved" and the next frame is drawn, and the bytes of the
  save's answer (the move itself is about 85 bytes);
- layout: the toolbar's "Lay out" from click to "Saved", the laid-out graph's bounding box (from the stored
  positions), the nodes visible after the fit that follows, and the nodes the minimap draws at least 1 px wide.

Timings are printed, never asserted. ``TRELLIS_BENCH_SIZES=20,600`` picks sizes, ``TRELLIS_BENCH_BASE=`` (empty)
measures this tree only, ``TRELLIS_BENCH_ROUNDS`` repeats each figure (median; default 3).

    make bench BENCH=editor_scale
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.bench_engine import table
from tests.server_support import free_port, listening

REPO = Path(__file__).resolve().parents[1]
SIZES = [int(size) for size in os.environ.get("TRELLIS_BENCH_SIZES", "20,100,300,600").split(",")]
BASE = os.environ.get("TRELLIS_BENCH_BASE", "143ebe8")
ROUNDS = int(os.environ.get("TRELLIS_BENCH_ROUNDS", "3"))
#: Requests that warm the servers' analysis caches, each on a new connection (see ``warm``).
WARM_REQUESTS = 8
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1600, "height": 1000}


def document(size: int) -> dict[str, Any]:
    """``size`` template nodes in a chain inside the orders loop, each writing a state field of its own (so the
    state schema has ``size`` fields), as an export carries it: no canvas positions."""
    names = [f"line_{n:03d}" for n in range(size)]
    nodes: list[dict[str, Any]] = [
        {"id": "customers", "kind": "foreach", "over": "input.customers"},
        {"id": "orders", "kind": "foreach", "over": "context.foreach.customers.item.orders"},
    ]
    routes = [{"source": "customers", "label": "loop", "target": "orders"},
              {"source": "orders", "label": "loop", "target": names[0]},
              {"source": "orders", "label": "done", "target": "customers"}]
    for n, name in enumerate(names):
        nodes.append({"id": name, "kind": "task", "task": "template", "input": [
            {"target": "template", "value": "{customer}: {sku}"},
            {"target": "values.customer", "path": "context.foreach.customers.item.name"},
            {"target": "values.sku", "path": "context.foreach.orders.item.sku"},
        ], "output": [{"source": ".", "target": name}]})
        routes.append({"source": name, "label": "ok", "target": names[n + 1] if n + 1 < size else "orders"})
    return {
        "id": "scale", "name": "Scale",
        "input_schema": {"type": "object", "required": ["customers"], "properties": {"customers": {
            "type": "array", "items": {"type": "object", "required": ["name", "orders"], "properties": {
                "name": {"type": "string"},
                "orders": {"type": "array", "items": {"type": "object", "required": ["sku"], "properties": {
                    "sku": {"type": "string"}, "qty": {"type": "integer"}}}}}}}}},
        "state_schema": {"type": "object", "properties": {name: {"type": "string"} for name in names}},
        "nodes": nodes, "routes": routes,
    }


# --- the sides: a copy of the code each, with a database and a server ------------------------------------------


class Side:
    """One tree (this one or the base's) served on its own database; ``urls[size]``: the editor of each size."""

    def __init__(self, name: str, root: Path, data: Path) -> None:
        self.name, self.root = name, root
        self.env = {**os.environ, "DJANGO_SETTINGS_MODULE": "designer.settings", "DJANGO_DEBUG": "true",
                    "DATABASE_URL": f"sqlite:///{data / f'{name}.sqlite3'}", "PYTHONPATH": str(root)}
        self.env.pop("TRELLIS_TASK_MODULES", None)
        self.process: subprocess.Popen[bytes] | None = None
        self.base_url = ""
        self.urls: dict[int, str] = {}
        self.session = ""
        self.documents = data / "documents.json"

    def prepare(self) -> None:
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=self.root, env=self.env,
                       check=True)
        self.documents.write_text(json.dumps({size: document(size) for size in SIZES}))
        done = subprocess.run([sys.executable, "-c", _PREPARE, str(self.documents)], cwd=self.root, env=self.env,
                              check=True, capture_output=True, text=True)
        made = json.loads(done.stdout.strip().splitlines()[-1])
        self.session, ids = made["session"], made["workflows"]
        port = free_port()
        self.base_url = f"http://127.0.0.1:{port}"
        self.urls = {int(size): f"{self.base_url}/workflows/{pk}/edit/" for size, pk in ids.items()}
        process = self.process = subprocess.Popen([sys.executable, "manage.py", "serve", f"127.0.0.1:{port}"],
                                                  cwd=self.root, env=self.env, stdout=subprocess.DEVNULL,
                                                  stderr=subprocess.DEVNULL)
        if not listening(port, process):
            raise RuntimeError(f"{self.name}: manage.py serve did not start")

    def reset(self, size: int) -> None:
        """The workflow of ``size`` back to its imported document (no positions), at a new revision."""
        subprocess.run([sys.executable, "-c", _RESET, str(self.documents), self.urls[size].rstrip("/").split("/")[-2],
                        str(size)],
                       cwd=self.root, env=self.env, check=True)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# Run in each side's tree (its own code and database): the user, team, one workflow per size, a session.
_PREPARE = """
import json, sys
import django
django.setup()
from django.contrib.auth import get_user_model
from django.test import Client
from designer.access import teams
from designer.workflows import services
documents = json.loads(open(sys.argv[1]).read())
user = get_user_model().objects.create_user("bench", "bench@example.com", "bench-password-1")
team = teams.create_team(actor=user, name="Bench")
ids = {size: services.import_workflow(actor=user, team=team, document=doc, name=f"Scale {size}").pk
       for size, doc in documents.items()}
client = Client()
client.force_login(user)
print(json.dumps({"session": client.cookies["sessionid"].value, "workflows": ids}))
"""

def drag_50px(page: Any, box: Any) -> None:
    """Press on ``box``'s title and move 50 px right, the button still down: the caller releases it (the
    profiler starts its trace in between)."""
    mouse = page.mouse
    mouse.move(box["x"] + 10, box["y"] + box["height"] / 2)
    mouse.down()
    mouse.move(box["x"] + 11, box["y"] + box["height"] / 2 + 1)
    mouse.move(box["x"] + 10 + 50, box["y"] + box["height"] / 2, steps=5)


_RESET = """
import json, sys
import django
django.setup()
try:
    from designer.workflows.analysis import dump_document, parse_document
except ImportError:  # a base tree from before issue 28 moved the designer by domain
    from designer.analysis import dump_document, parse_document
from designer.models import Workflow
from django.db.models import F
workflow = Workflow.objects.get(pk=int(sys.argv[2]))
parsed = parse_document({**json.loads(open(sys.argv[1]).read())[sys.argv[3]], "id": workflow.slug})
Workflow.objects.filter(pk=workflow.pk).update(document=dump_document(parsed), revision=F("revision") + 1)
"""


@contextmanager
def base_tree(commit: str, into: Path) -> Iterator[Path]:
    """The base commit's tree, its front end built (``npm ci`` + Vite) in it."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", commit], capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"cannot read {commit!r} ({archive.stderr.decode().strip()}); set TRELLIS_BENCH_BASE")
    into.mkdir()
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=into, check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["npm", "run", "--silent", "build", "--", "--logLevel", "warn"], cwd=into, check=True)
    yield into


# --- one measurement in the browser -----------------------------------------------------------------------------

# In the page, polled every frame: when the first fit is done, and when after it the canvas is complete (ms since
# navigation start): the minimap shows every node, and every node inside the canvas's view is drawn and measured
# (a big graph draws only those; the base drew all of them). The nodes in view are found from the minimap's boxes
# (flow coordinates, every node) and the viewport's transform; ``dom`` counts the nodes in the page then.
_WATCH_CANVAS = """(count) => {
  const found = (window.__canvas ??= {});
  const now = performance.now();
  const root = document.querySelector("[data-editor-canvas]");
  if (!found.fitted && root && root.dataset.fitted === "true") found.fitted = now;
  if (!found.fitted || found.drawn) return Boolean(found.drawn);
  const boxes = document.querySelectorAll(".wf-minimap .react-flow__minimap-node");
  const viewport = document.querySelector(".react-flow__viewport");
  const pane = document.querySelector(".react-flow__pane");
  if (boxes.length !== count || !viewport || !pane) return false;
  const m = new DOMMatrixReadOnly(getComputedStyle(viewport).transform);
  const r = pane.getBoundingClientRect();
  const [x1, y1] = [-m.e / m.a, -m.f / m.a];
  const [x2, y2] = [x1 + r.width / m.a, y1 + r.height / m.a];
  let inView = 0;
  for (const b of boxes) {
    const [x, y, w, h] = ["x", "y", "width", "height"].map((k) => Number(b.getAttribute(k)));
    if (w >= 1 && x < x2 && x + w > x1 && y < y2 && y + h > y1) inView += 1;
  }
  const nodes = [...document.querySelectorAll(".react-flow__node")];
  const drawn = nodes.filter((n) => {
    if (n.style.visibility === "hidden") return false;
    const b = n.getBoundingClientRect();
    return b.width > 0 && b.right > r.left && b.left < r.right && b.bottom > r.top && b.top < r.bottom;
  }).length;
  if (inView > 0 && drawn >= inView) {
    found.drawn = now;
    found.dom = nodes.length;
  }
  return Boolean(found.drawn);
}"""

# Installed before a pointer release (or a click): from it until the canvas says "Saved" at a newer revision, then
# one more frame; the figures land in window.__save.
_WATCH_SAVE = """(before) => {
  const root = document.querySelector("[data-editor-canvas]");
  let started = null;
  window.__save = null;
  const begin = () => { started ??= performance.now(); };
  window.addEventListener("pointerup", begin, {capture: true, once: true});
  window.addEventListener("click", begin, {capture: true, once: true});
  const observer = new MutationObserver(() => {
    if (started === null || root.dataset.state !== "saved" || Number(root.dataset.revision) <= before) return;
    observer.disconnect();
    const saved = performance.now() - started;
    requestAnimationFrame(() => setTimeout(() => {
      window.__save = {saved, settled: performance.now() - started};
    }, 0));
  });
  observer.observe(root, {attributes: true});
}"""

# After the layout's fit: the zoom, how many nodes show in the canvas, how many the minimap draws >= 1 px wide.
_VIEW = """() => {
  const pane = document.querySelector(".react-flow__pane").getBoundingClientRect();
  const nodes = [...document.querySelectorAll(".react-flow__node")].map((n) => n.getBoundingClientRect());
  const shown = nodes.filter((r) => r.right > pane.left && r.left < pane.right && r.bottom > pane.top
                                     && r.top < pane.bottom).length;
  const mini = [...document.querySelectorAll(".wf-minimap .react-flow__minimap-node")]
    .filter((n) => n.getBoundingClientRect().width >= 1).length;
  return {shown, mini, zoom: Number(document.querySelector("[data-editor-canvas]").dataset.zoom)};
}"""


def _bounds(positions: dict[str, dict[str, float]]) -> tuple[float, float]:
    xs = [p["x"] for p in positions.values()]
    ys = [p["y"] for p in positions.values()]
    return max(xs) - min(xs) + 220, max(ys) - min(ys) + 112


def measure(browser: Any, side: Side, size: int) -> dict[str, Any]:
    warm(side, size)  # resets the workflow to its imported document first
    context = browser.new_context(viewport=VIEWPORT)
    context.add_cookies([{"name": "sessionid", "value": side.session, "url": side.base_url}])
    page = context.new_page()
    try:
        answers: dict[str, int] = {}

        def record(response: Any) -> None:
            if response.request.method == "POST" and "/edit/change/" in response.url:
                answers["bytes"] = len(response.body())
                timing = response.request.timing
                answers["wait"] = timing["responseStart"] - timing["requestStart"]
            elif response.url == side.urls[size]:
                answers["page"] = len(response.body())

        page.on("response", record)
        page.goto(side.urls[size], wait_until="commit")
        page.wait_for_function(_WATCH_CANVAS, arg=size + 2, polling="raf", timeout=120_000)
        canvas = page.evaluate("() => window.__canvas")
        timing = page.evaluate("""() => { const n = performance.getEntriesByType("navigation")[0];
                                          return n.responseStart - n.requestStart; }""")
        page.wait_for_function("() => document.querySelector('[data-editor-canvas]').dataset.state === 'saved'")
        revision = int(page.locator("[data-editor-canvas]").get_attribute("data-revision") or 0)
        page.wait_for_function("() => document.querySelector('.htmx-request') === null")
        revision = int(page.locator("[data-editor-canvas]").get_attribute("data-revision") or 0)
        page.evaluate(_WATCH_SAVE, revision)
        page.get_by_role("button", name="Layout", exact=True).click()
        laid = page.wait_for_function("() => window.__save", timeout=60_000).json_value()
        # The fit after the layout animates for 200 ms; then the panels a save refreshes.
        page.wait_for_timeout(400)
        page.wait_for_function("() => document.querySelector('.htmx-request') === null")
        view = page.evaluate(_VIEW)
        revision = int(page.locator("[data-editor-canvas]").get_attribute("data-revision") or 0)
        # A node in view: the first of the chain, at the start of the graph where the fit puts the view.
        title = page.locator('.react-flow__node[data-id="line_000"] .wf-node__title')
        box = title.bounding_box()
        assert box, "line_000 is not drawn"
        page.evaluate(_WATCH_SAVE, revision)
        drag_50px(page, box)
        page.mouse.up()
        drag = page.wait_for_function("() => window.__save", timeout=60_000).json_value()
        drag_bytes, drag_wait = answers.get("bytes", 0), answers.get("wait", 0)
        return {"page": answers.get("page", 0), "server": timing, "drawn": canvas["drawn"],
                "fitted": canvas["fitted"], "dom": canvas["dom"], "drag": drag["settled"], "drag_saved": drag["saved"],
                "drag_wait": drag_wait,
                "drag_bytes": drag_bytes, "layout": laid["settled"], "shown": view["shown"], "mini": view["mini"],
                "zoom": view["zoom"]}
    finally:
        context.close()


def warm(side: Side, size: int) -> None:
    """Not measured: each server worker has analysed this size's document once (the analysis is cached per
    revision and process), as when a person reopens a workflow.

    Each request on a connection of its own: the kernel hands a new connection to whichever of gunicorn's
    processes accepts first, so both see some; a browser context's requests share one kept-alive connection, so
    they all reached one process and the measured navigation, on a new connection, often met the other one
    uncached and paid the 600-node analysis (the 180 ms "page server time" against 75 ms of session 14's run)."""
    side.reset(size)
    for _ in range(WARM_REQUESTS):
        request = urllib.request.Request(side.urls[size], headers={"Cookie": f"sessionid={side.session}",
                                                                   "Connection": "close"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            answer.read()


def laid_out_box(side: Side, size: int) -> tuple[float, float]:
    done = subprocess.run([sys.executable, "-c", _POSITIONS, side.urls[size].rstrip("/").split("/")[-2]],
                          cwd=side.root, env=side.env, check=True, capture_output=True, text=True)
    return _bounds(json.loads(done.stdout.strip().splitlines()[-1]))


_POSITIONS = """
import json, sys
import django
django.setup()
from designer.models import Workflow
print(json.dumps(Workflow.objects.get(pk=int(sys.argv[1])).document["metadata"]["positions"]))
"""


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(run[key] for run in runs))


def main() -> int:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="trellis-bench-editor-") as tmp:
        data = Path(tmp)
        sides = [Side("this", REPO, data)]
        stack = []
        if BASE:
            stack.append(base_tree(BASE, data / "base"))
            sides.insert(0, Side(f"base {BASE}", stack[0].__enter__(), data))
        try:
            for side in sides:
                side.prepare()
            results: dict[tuple[str, int], dict[str, Any]] = {}
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                for side in sides:  # not measured: the servers' first requests import and compile
                    measure(browser, side, SIZES[0])
                for size in SIZES:
                    runs: dict[str, list[dict[str, Any]]] = {side.name: [] for side in sides}
                    for _ in range(ROUNDS):
                        for side in sides:
                            runs[side.name].append(measure(browser, side, size))
                    for side in sides:
                        found = runs[side.name]
                        merged: dict[str, Any] = {key: _median(found, key) for key in found[0]}
                        merged["box"] = laid_out_box(side, size)
                        results[(side.name, size)] = merged
                        print(f"  measured {side.name} at {size} nodes", flush=True)
                browser.close()
        finally:
            for side in sides:
                side.stop()
            for entered in stack:
                entered.__exit__(None, None, None)
    _report(sides, results)
    return 0


def _ratio(base: float, this: float) -> str:
    return f"{base / this:.1f}x" if this else "-"


def _report(sides: list[Side], results: dict[tuple[str, int], dict[str, Any]]) -> None:
    rows = []
    for size in SIZES:
        for side in sides:
            r = results[(side.name, size)]
            width, height = r["box"]
            rows.append([str(size), side.name, f"{r['page'] / 1024:,.0f}", f"{r['server']:,.0f}",
                         f"{r['drawn'] / 1000:.2f}", f"{r['fitted'] / 1000:.2f}", f"{r['dom']:.0f}",
                         f"{r['drag']:,.0f}", f"{r['drag_wait']:,.0f}",
                         f"{r['drag_bytes'] / 1024:,.1f}", f"{r['layout'] / 1000:.2f}",
                         f"{width:,.0f} x {height:,.0f}", f"{r['shown']:.0f}/{size + 2}",
                         f"{r['mini']:.0f}/{size + 2}", f"{r['zoom']:.2f}"])
    table("The editor at scale: N template nodes inside customers -> orders (Chromium, 1600 x 1000)",
          ["nodes", "tree", "page KB", "page server ms", "canvas complete s", "fitted s", "nodes in page",
           "drag to saved ms", "its request's wait ms",
           "save answer KB", "layout s", "laid-out box px", "shown after layout", "minimap nodes", "zoom"], rows,
          f"Median of {ROUNDS} rounds, the trees taking turns. canvas: navigation start until, after the first "
          "fit, every node in view is drawn\nand measured and the minimap shows every node / until the first fit "
          "(the document has no positions: the canvas lays it\nout itself); nodes in page: how many the page holds "
          "then. drag: 50 px, pointer up until 'Saved' and the next frame (wait: the save's request sent until its\n"
          "answer starts, the server's time and its queue). layout: the toolbar's Lay out, click "
          "until 'Saved' and the next frame; box: the stored positions' extent; shown: nodes\ninside the canvas "
          "after the fit; minimap: nodes drawn at least 1 px wide. Targets at 600: canvas < 1.0 s, drag < 150 ms,\n"
          "layout < 0.5 s into a shape that fits a screen at a readable zoom, a minimap that shows the graph.")
    if len(sides) == 2:
        base, this = sides
        ratios = []
        for size in SIZES:
            b, t = results[(base.name, size)], results[(this.name, size)]
            ratios.append([str(size), _ratio(b["page"], t["page"]), _ratio(b["drawn"], t["drawn"]),
                           _ratio(b["drag"], t["drag"]), _ratio(b["drag_bytes"], t["drag_bytes"]),
                           _ratio(b["layout"], t["layout"])])
        table(f"Ratios: {base.name} / this tree (higher is better for this tree)",
              ["nodes", "page bytes", "canvas drawn", "drag", "save answer bytes", "layout"], ratios, "")


if __name__ == "__main__":
    sys.exit(main())
