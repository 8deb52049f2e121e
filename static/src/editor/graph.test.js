import { describe, expect, it } from "vitest";

import {
  arrowheadId,
  buildEdges,
  buildFrames,
  buildNodes,
  drawsVisibleOnly,
  regionColors,
  ROUTE_COLORS,
  withChannels,
} from "./graph.js";
import { DRAW_VISIBLE_FROM, estimatedHeight, NODE_WIDTH } from "./layout.js";
import { positionsOf, routeOps } from "./doc.js";

// customers -> orders (nested foreach) with one task in the inner body.
const doc = {
  start: "customers",
  nodes: [
    { id: "customers", kind: "foreach", over: "input.customers" },
    { id: "orders", kind: "foreach", over: "context.foreach.customers.item.orders", name: "Orders" },
    { id: "pack", kind: "task", task: "pack_item" },
    { id: "end", kind: "task", task: "finish" },
  ],
  routes: [
    { source: "customers", label: "loop", target: "orders" },
    { source: "orders", label: "loop", target: "pack" },
    { source: "pack", label: "ok", target: "orders" },
    { source: "orders", label: "done", target: "customers" },
    { source: "customers", label: "done", target: "end" },
    { source: "pack", label: "typo", target: "end" },
  ],
  metadata: { positions: { customers: { x: 0, y: 0 }, orders: { x: 300, y: 0 }, pack: { x: 600, y: 0 }, end: { x: 900, y: 0 } } },
};
const analysis = {
  labels: { customers: ["loop", "done"], orders: ["loop", "done"], pack: ["ok", "error"], end: ["ok"] },
  control_regions: { orders: ["customers"], pack: ["customers", "orders"] },
  reachable: ["customers", "orders", "pack"],
};
const diagnostics = [
  { node_id: "pack", severity: "error" },
  { node_id: "pack", severity: "warning" },
  { node_id: null, severity: "error" },
];

describe("doc", () => {
  it("reads positions and turns routes into disconnect operations", () => {
    expect(positionsOf({})).toEqual({});
    expect(positionsOf(doc).pack).toEqual({ x: 600, y: 0 });
    expect(routeOps(doc.routes.slice(0, 1))).toEqual([{ op: "disconnect", source: "customers", label: "loop" }]);
  });
});

describe("buildNodes", () => {
  const nodes = buildNodes(doc, analysis, diagnostics, [], { canEdit: true, selectId: "pack" });
  const byId = Object.fromEntries(nodes.map((node) => [node.id, node]));

  it("shows the analyzer's labels and flags a stored route's unknown label", () => {
    expect(byId.pack.data.labels).toEqual([
      { name: "ok", known: true },
      { name: "error", known: true },
      { name: "typo", known: false },
    ]);
  });

  it("counts diagnostics per node, marks start, reachability, region and selection", () => {
    expect(byId.pack.data.errors).toBe(1);
    expect(byId.pack.data.warnings).toBe(1);
    expect(byId.customers.data.isStart).toBe(true);
    expect(byId.end.data.unreachable).toBe(true);
    expect(byId.pack.data.region).toEqual(["customers", "orders"]);
    expect(byId.pack.data.regionColor).toBe(regionColors(doc).orders);
    expect(byId.pack.selected).toBe(true);
    expect(byId.orders.data.title).toBe("Orders");
    expect(byId.orders.data.subtitle).toBe("over context.foreach.customers.item.orders");
  });

  it("keeps a node under the pointer while it is dragged", () => {
    const dragging = [{ id: "pack", dragging: true, position: { x: 5, y: 6 } }];
    const again = buildNodes(doc, analysis, [], dragging, { canEdit: true, selectId: null });
    expect(again.find((node) => node.id === "pack").position).toEqual({ x: 5, y: 6 });
  });

  it("lays out a document with no stored positions, and places a newcomer to the right", () => {
    const bare = { ...doc, metadata: {} };
    const laid = buildNodes(bare, analysis, [], [], { canEdit: false, selectId: null });
    expect(laid.every((node) => Number.isFinite(node.position.x) && Number.isFinite(node.position.y))).toBe(true);
    const partial = { ...doc, metadata: { positions: { customers: { x: 0, y: 0 } } } };
    const placed = buildNodes(partial, analysis, [], [], { canEdit: false, selectId: null });
    expect(placed.find((node) => node.id === "pack").position.x).toBeGreaterThan(0);
  });
});

describe("buildEdges and frames", () => {
  const edges = buildEdges(doc, analysis, []);
  const byId = Object.fromEntries(edges.map((edge) => [edge.id, edge]));

  it("draws the route back to the innermost loop as 'next item', and error routes apart", () => {
    expect(byId["pack::ok"].data.back).toBe(true);
    expect(byId["pack::ok"].label).toBe("next item");
    expect(byId["orders::done"].data.back).toBe(true);
    expect(byId["customers::loop"].className).toContain("wf-edge--loop");
    expect(byId["customers::done"].data.back).toBe(false);
  });

  it("ends every route in the arrowhead of its own colour, one the canvas defines (chrome.jsx Arrowheads)", () => {
    const withError = { ...doc, routes: [...doc.routes, { source: "end", label: "error", target: "pack" }] };
    const drawn = buildEdges(withError, analysis, []);
    const colors = new Set(drawn.map((edge) => edge.style.stroke));
    expect(colors.size).toBeGreaterThanOrEqual(3); // a region's, an error route's, a plain route's
    for (const edge of drawn) {
      // A string: React Flow then builds no marker list of its own from every edge.
      expect(edge.markerEnd).toBe(arrowheadId(edge.style.stroke));
      expect(ROUTE_COLORS).toContain(edge.style.stroke);
    }
    expect(new Set(ROUTE_COLORS.map(arrowheadId)).size).toBe(ROUTE_COLORS.length);
  });

  it("frames each loop body, the outer frame around the inner one", () => {
    const nodes = buildNodes(doc, analysis, [], [], { canEdit: true, selectId: null });
    const frames = Object.fromEntries(buildFrames(doc, analysis, nodes).map((frame) => [frame.id, frame]));
    const outer = frames.customers;
    const inner = frames.orders;
    expect(outer.x).toBeLessThan(inner.x);
    expect(outer.y).toBeLessThan(inner.y);
    expect(outer.x + outer.width).toBeGreaterThan(inner.x + inner.width);
    expect(frames.end).toBeUndefined();
  });

  it("gives sibling routes of one node their own channels", () => {
    const nodes = buildNodes(doc, analysis, [], [], { canEdit: true, selectId: null });
    const fanned = withChannels(
      [
        { id: "pack::error", source: "pack", sourceHandle: "error", target: "end", type: "smoothstep" },
        { id: "pack::typo", source: "pack", sourceHandle: "typo", target: "end", type: "smoothstep" },
        { id: "end::ok", source: "end", sourceHandle: "ok", target: "pack", type: "smoothstep" },
      ],
      nodes,
    );
    const steps = fanned.filter((edge) => edge.pathOptions).map((edge) => edge.pathOptions.stepPosition);
    expect(steps).toHaveLength(2);
    expect(steps[0]).not.toBe(steps[1]);
    expect(fanned[2].pathOptions).toBeUndefined();
  });
});

describe("a big graph drawn only where it is in view", () => {
  it("gives a node not yet measured its estimated size and a handle per label, and a measured one none", () => {
    const measured = [{ id: "pack", measured: { width: 220, height: 150 }, position: { x: 600, y: 0 } }];
    const nodes = buildNodes(doc, analysis, [], measured, { canEdit: true, selectId: null, estimate: true });
    const byId = Object.fromEntries(nodes.map((node) => [node.id, node]));
    const end = byId.end;
    expect(end.initialWidth).toBe(NODE_WIDTH);
    expect(end.initialHeight).toBe(estimatedHeight(1));
    expect(end.handles.map((h) => [h.id, h.type, h.position])).toEqual([["ok", "source", "right"], ["in", "target", "left"]]);
    // Handles on the right edge, in label order, inside the node's height; the input halfway down the left.
    const orders = byId.orders.handles;
    expect(orders[0].y).toBeLessThan(orders[1].y);
    expect(orders[1].y + orders[1].height).toBeLessThanOrEqual(byId.orders.initialHeight);
    expect(orders[0].x + orders[0].width).toBeGreaterThan(NODE_WIDTH);
    expect(orders[2].x).toBeLessThan(0);
    expect(byId.pack.handles).toBeUndefined();
    expect(byId.pack.initialHeight).toBeUndefined();
    // Without estimates (a graph drawn whole) nodes carry neither.
    const whole = buildNodes(doc, analysis, [], [], { canEdit: true, selectId: null });
    expect(whole.some((node) => node.handles || node.initialWidth)).toBe(false);
  });

  it("keeps each unchanged route's edge and rebuilds a changed one", () => {
    const first = buildEdges(doc, analysis, []);
    const retargeted = {
      ...doc,
      routes: doc.routes.map((r) => (r.source === "pack" && r.label === "typo" ? { ...r, target: "customers" } : r)),
    };
    const again = buildEdges(retargeted, analysis, first);
    again.forEach((edge, index) => {
      if (edge.id === "pack::typo") expect(edge).not.toBe(first[index]);
      else expect(edge).toBe(first[index]);
    });
  });

  it("draws the route back without the endless dash from DRAW_VISIBLE_FROM nodes", () => {
    expect(buildEdges(doc, analysis, []).find((edge) => edge.id === "pack::ok").animated).toBe(true);
    const names = Array.from({ length: DRAW_VISIBLE_FROM }, (_, n) => `t${n}`);
    const big = {
      ...doc,
      nodes: [...doc.nodes, ...names.map((id) => ({ id, kind: "task", task: "finish" }))],
    };
    expect(drawsVisibleOnly(big)).toBe(true);
    expect(drawsVisibleOnly(doc)).toBe(false);
    expect(buildEdges(big, analysis, []).find((edge) => edge.id === "pack::ok").animated).toBe(false);
  });
});
