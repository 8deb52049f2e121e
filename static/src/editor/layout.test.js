import { describe, expect, it } from "vitest";

import { autoLayout, DEFAULT_VIEW, dropSpot, estimatedHeight, extent, fitZoom, freeSpot, NODE_WIDTH, READABLE_ZOOM,
  readableViewport, SMALLEST_FONT_PX, besideOutput, BESIDE_GAP } from "./layout.js";
import { nestedChain } from "./chainGraph.test-support.js";

const box = (x, y) => ({ x, y, width: NODE_WIDTH, height: 110 });
const apart = (a, b) =>
  a.x + NODE_WIDTH <= b.x || b.x + NODE_WIDTH <= a.x || a.y + 110 <= b.y || b.y + 110 <= a.y;

describe("dropSpot", () => {
  it("keeps the drop point when it touches no node", () => {
    expect(dropSpot([box(0, 0)], { x: 600, y: 400 })).toEqual({ x: 600, y: 400 });
  });

  it("moves a drop onto a node to the nearest free place", () => {
    const taken = [box(100, 100)];
    const spot = dropSpot(taken, { x: 110, y: 110 });
    expect(apart({ ...spot }, taken[0])).toBe(true);
    // Nearest: within a few rings of 40 px, not somewhere far away.
    expect(Math.hypot(spot.x - 110, spot.y - 110)).toBeLessThan(400);
  });

  it("never lands on any of many nodes", () => {
    const taken = [];
    for (let i = 0; i < 5; i += 1) for (let j = 0; j < 5; j += 1) taken.push(box(i * 260, j * 150));
    const spot = dropSpot(taken, { x: 500, y: 300 });
    for (const other of taken) expect(apart(spot, other)).toBe(true);
  });
});

describe("readableViewport", () => {
  it("is a zoom at which the smallest canvas text is still 12 px on screen", () => {
    expect(SMALLEST_FONT_PX * READABLE_ZOOM).toBeGreaterThanOrEqual(12);
    expect(SMALLEST_FONT_PX * READABLE_ZOOM).toBeLessThan(12.05);
  });

  it("keeps a fit that is legible", () => {
    const fitted = { x: 10, y: 20, zoom: 1 };
    expect(readableViewport(fitted, { x: 0, y: 0 }, { left: 5, top: 5 })).toBe(fitted);
  });

  it("never zooms out below the readable zoom and shows the graph's top left", () => {
    const view = readableViewport({ x: 0, y: 0, zoom: 0.2 }, { x: 100, y: 50 }, { left: 30, top: 40 });
    expect(view).toEqual({ x: 30 - 100 * READABLE_ZOOM, y: 40 - 50 * READABLE_ZOOM, zoom: READABLE_ZOOM });
  });

  it("shows the whole graph, centred, when it fits the canvas at the readable zoom", () => {
    // The fit's padding asked for a little less than the readable zoom; the margins leave room for it.
    const bounds = { x: 100, y: 50, width: 1000, height: 400 };
    const area = { width: 1000, height: 668 };
    const margin = { left: 24, top: 64, bottom: 48 };
    const view = readableViewport({ x: 0, y: 0, zoom: 0.9 }, bounds, margin, area);
    expect(view.zoom).toBe(READABLE_ZOOM);
    const left = bounds.x * view.zoom + view.x;
    const right = (bounds.x + bounds.width) * view.zoom + view.x;
    const top = bounds.y * view.zoom + view.y;
    const bottom = (bounds.y + bounds.height) * view.zoom + view.y;
    expect(left).toBeGreaterThanOrEqual(margin.left);
    expect(right).toBeLessThanOrEqual(area.width - margin.left);
    expect(left - margin.left).toBeCloseTo(area.width - margin.left - right);
    expect(top).toBeGreaterThanOrEqual(margin.top);
    expect(bottom).toBeLessThanOrEqual(area.height - margin.bottom);
  });

  it("starts at the graph's left when it is too wide, still centring it vertically when that fits", () => {
    const bounds = { x: -40, y: 10, width: 2000, height: 200 };
    const area = { width: 800, height: 600 };
    const view = readableViewport({ x: 0, y: 0, zoom: 0.3 }, bounds, { left: 24, top: 64, bottom: 48 }, area);
    expect(bounds.x * view.zoom + view.x).toBeCloseTo(24);
    const top = bounds.y * view.zoom + view.y;
    expect(top).toBeCloseTo(64 + (600 - 64 - 48 - 200 * READABLE_ZOOM) / 2);
  });
});

describe("autoLayout", () => {
  it("stacks a branch's targets in the order of its label handles, so its edges neither cross nor overlap", () => {
    // The spending-approval demo: 'large' (the first handle) leads to the review, 'small' to the auto approval.
    const labelled = (id, names) => ({ id, labels: names.map((name) => ({ name })) });
    const branch = [labelled("size", ["large", "small", "error"]), labelled("review", ["ok", "error"]),
      labelled("record", ["approved", "rejected", "error"]), labelled("auto", ["approved", "rejected", "error"])];
    const wired = [{ source: "size", label: "large", target: "review" }, { source: "size", label: "small", target: "auto" },
      { source: "review", label: "ok", target: "record" }];
    for (const order of [branch, [...branch].reverse()]) {
      const at = autoLayout(order, wired);
      expect(at.review.x).toBe(at.auto.x);
      expect(at.review.y).toBeLessThan(at.auto.y);
      const box = (id) => ({ ...at[id], width: NODE_WIDTH, height: estimatedHeight(order.find((n) => n.id === id).labels.length) });
      for (const [a, b] of [["review", "auto"], ["review", "record"], ["auto", "record"], ["size", "auto"]]) {
        expect(apart(box(a), box(b))).toBe(true);
      }
    }
  });

  const nodes = ["a", "b", "c"].map((id) => ({ id, labels: [{ name: "ok" }] }));
  const routes = [
    { source: "a", target: "b" },
    { source: "b", target: "c" },
  ];

  it("lays a chain out left to right without overlaps", () => {
    const at = autoLayout(nodes, routes);
    expect(at.a.x).toBeLessThan(at.b.x);
    expect(at.b.x).toBeLessThan(at.c.x);
    expect(apart(at.a, at.b) && apart(at.b, at.c) && apart(at.a, at.c)).toBe(true);
  });

  it("places every node, also when routes name unknown nodes", () => {
    const at = autoLayout(nodes, [...routes, { source: "c", target: "ghost" }]);
    expect(Object.keys(at).sort()).toEqual(["a", "b", "c"]);
  });

  it("keeps a loop body together as one block", () => {
    const loop = [
      { id: "each", labels: [{ name: "loop" }, { name: "done" }] },
      { id: "x", labels: [{ name: "ok" }] },
      { id: "y", labels: [{ name: "ok" }] },
      { id: "after", labels: [{ name: "ok" }] },
    ];
    const loopRoutes = [
      { source: "each", target: "x" },
      { source: "x", target: "y" },
      { source: "y", target: "each" },
      { source: "each", target: "after" },
    ];
    const at = autoLayout(loop, loopRoutes, { x: ["each"], y: ["each"] });
    expect(Object.keys(at).sort()).toEqual(["after", "each", "x", "y"]);
    for (const [a, b] of [["x", "y"], ["x", "after"], ["y", "after"], ["each", "x"]]) {
      expect(apart(at[a], at[b])).toBe(true);
    }
  });
});

describe("autoLayout's shape (issue 34: a 20-node chain was one row 6,820 px wide, 3 of 22 nodes in view)", () => {
  it("wraps a small graph wider than the canvas into rows shaped like the canvas", () => {
    const { nodes, routes, regions } = nestedChain(20);
    const at = autoLayout(nodes, routes, regions);
    const box = extent(nodes, at);
    const viewAspect = DEFAULT_VIEW.width / DEFAULT_VIEW.height;
    expect(box.width / box.height).toBeGreaterThan(viewAspect / 2);
    expect(box.width / box.height).toBeLessThan(viewAspect * 1.5);
    // One row would need a zoom of ~0.15 to fit; wrapped, a fit shows it at 0.5 or more.
    expect(fitZoom(nodes, at)).toBeGreaterThan(0.5);
  });

  it("keeps the reading order: each row left to right, the rows top to bottom", () => {
    const { nodes, routes, regions, names } = nestedChain(20);
    const at = autoLayout(nodes, routes, regions);
    let rows = 1;
    names.slice(1).forEach((id, n) => {
      const before = at[names[n]];
      if (at[id].y === before.y) expect(at[id].x).toBeGreaterThan(before.x);
      else {
        expect(at[id].y).toBeGreaterThan(before.y + estimatedHeight(2));
        expect(at[id].x).toBeLessThan(before.x);
        rows += 1;
      }
    });
    expect(rows).toBeGreaterThan(2);
  });

  it("keeps each loop body inside its loop, after its foreach", () => {
    const { nodes, routes, regions, names } = nestedChain(20);
    const at = autoLayout(nodes, routes, regions);
    const body = extent(nodes.filter((node) => names.includes(node.id)), at);
    const outer = extent(nodes.filter((node) => node.id !== "customers"), at);
    const owner = (id) => ({ ...at[id], width: NODE_WIDTH, height: estimatedHeight(3) });
    const outside = (box, area) => box.x + box.width <= area.x || box.x >= area.x + area.width
      || box.y + box.height <= area.y || box.y >= area.y + area.height;
    // orders' body holds neither foreach; customers' body (orders and the chain) does not hold customers.
    expect(outside(owner("orders"), body)).toBe(true);
    expect(outside(owner("customers"), body)).toBe(true);
    expect(outside(owner("customers"), outer)).toBe(true);
    // Each foreach comes before its body: left of it, or above it.
    for (const [id, area] of [["orders", body], ["customers", outer]]) {
      const o = owner(id);
      expect(o.x + o.width <= area.x || o.y + o.height <= area.y).toBe(true);
    }
  });

  it("keeps one row for a chain that fits the canvas at a readable zoom", () => {
    const { nodes, routes, regions } = nestedChain(1);
    const at = autoLayout(nodes, routes, regions);
    expect(fitZoom(nodes, at)).toBeGreaterThanOrEqual(READABLE_ZOOM);
    expect(at.customers.x).toBeLessThan(at.orders.x);
    expect(at.orders.x).toBeLessThan(at.line_0.x);
  });

  it("lays a graph out to the canvas it is given: a tall canvas gets a taller layout", () => {
    for (const size of [20, 300]) {
      const { nodes, routes, regions } = nestedChain(size);
      const wide = extent(nodes, autoLayout(nodes, routes, regions, { width: 1600, height: 600 }));
      const tall = extent(nodes, autoLayout(nodes, routes, regions, { width: 600, height: 1200 }));
      expect(tall.width / tall.height).toBeLessThan(wide.width / wide.height / 2);
    }
  });
});

describe("freeSpot and estimatedHeight", () => {
  it("steps down past taken places", () => {
    expect(freeSpot({ a: { x: 0, y: 0 } }, { x: 0, y: 0 })).toEqual({ x: 0, y: 110 });
    expect(freeSpot({}, { x: 3.4, y: 7.6 })).toEqual({ x: 3, y: 8 });
  });

  it("grows with the labels a node shows, with room for one at least", () => {
    expect(estimatedHeight(0)).toBe(estimatedHeight(1));
    expect(estimatedHeight(3)).toBeGreaterThan(estimatedHeight(2));
  });
});

describe("besideOutput", () => {
  const size = { width: NODE_WIDTH, height: 110 };
  const anchor = { x: 0, y: 0, width: NODE_WIDTH, height: 130 };
  const overlaps = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
  const boxOf = (spot) => ({ ...spot, ...size });

  it("goes right of the selected node, level with its free output", () => {
    const spot = besideOutput({ anchor, handleY: 100, boxes: [anchor], size });
    expect(spot.x).toBe(anchor.x + anchor.width + BESIDE_GAP);
    expect(spot.y).toBe(100 - size.height / 2);
  });

  it("never lands on another node: the next free place in that column", () => {
    const blocker = { x: anchor.width + BESIDE_GAP, y: 40, width: NODE_WIDTH, height: 120 };
    const spot = besideOutput({ anchor, handleY: 100, boxes: [anchor, blocker], size });
    expect(overlaps(boxOf(spot), blocker)).toBe(false);
    expect(overlaps(boxOf(spot), anchor)).toBe(false);
    expect(spot.x).toBe(anchor.x + anchor.width + BESIDE_GAP);
    // Only as far from the free output as the blocker makes it: just below it (with its clearance).
    expect(spot.y).toBeGreaterThanOrEqual(blocker.y + blocker.height);
    expect(spot.y).toBeLessThanOrEqual(blocker.y + blocker.height + 40);
  });

  it("never lands on a route", () => {
    // A route running straight across where the node would go.
    const line = Array.from({ length: 100 }, (_, i) => ({ x: 200 + i * 8, y: 110 }));
    const spot = besideOutput({ anchor, handleY: 100, boxes: [anchor], routes: [line], size });
    expect(line.some((p) => p.x >= spot.x && p.x <= spot.x + size.width && p.y >= spot.y
      && p.y <= spot.y + size.height)).toBe(false);
  });

  it("moves to a further column when its column is full from top to bottom", () => {
    const wall = { x: anchor.width + BESIDE_GAP - 10, y: -5000, width: 60, height: 10000 };
    const spot = besideOutput({ anchor, handleY: 100, boxes: [anchor, wall], size });
    expect(spot.x).toBeGreaterThan(wall.x + wall.width);
    expect(overlaps(boxOf(spot), wall)).toBe(false);
    expect(spot.y).toBe(100 - size.height / 2);
  });
});
