// Document + analysis -> React Flow nodes, edges and region frames. Every
// semantic fact here (labels, control regions, reachability, diagnostics)
// comes from the server's answer; this file only draws it.
import { positionsOf } from "./doc.js";
import { autoLayout, DRAW_VISIBLE_FROM, estimatedHeight, freeSpot, LABEL_ROW, NODE_WIDTH } from "./layout.js";

const REGION_COLORS = ["#7c4dff", "#00897b", "#ef6c00", "#c2185b", "#1e88e5", "#6d4c41"];
const ERROR_ROUTE_COLOR = "#c0392b";
const ROUTE_COLOR = "#8a94a6";

// Every colour a route is drawn in, each with its arrowhead defined once on the canvas (chrome.jsx Arrowheads).
// An edge names its arrowhead by id: given as an object, React Flow derives its list of arrowheads from every
// edge (a string built and sorted per edge) whenever the edges change, ~12 ms per change at 600 nodes (issue 34).
export const ROUTE_COLORS = [...REGION_COLORS, ERROR_ROUTE_COLOR, ROUTE_COLOR];

export function arrowheadId(color) {
  return `wf-arrow-${color.replace("#", "")}`;
}

export function regionColors(doc) {
  const colors = {};
  doc.nodes
    .filter((node) => node.kind === "foreach")
    .forEach((node, index) => {
      colors[node.id] = REGION_COLORS[index % REGION_COLORS.length];
    });
  return colors;
}

function subtitle(node) {
  switch (node.kind) {
    case "task":
      return node.task;
    case "foreach":
      return `over ${node.over}`;
    case "subgraph":
      return `${node.workflow.id} · ${node.workflow.version == null ? "latest" : `v${node.workflow.version}`}`;
    case "branch":
      return `on ${node.path}`;
    case "interrupt":
      return node.prompt ? node.prompt.slice(0, 60) : "waits for a person";
    default:
      return "";
  }
}

// Labels the analyzer reports, plus any label a stored route uses that the
// node cannot emit, drawn as an "unknown" handle so the broken route shows.
// routesFrom: the document's routes by source (one pass, not one per node: 600 nodes made that 360,000 steps).
function labelsOf(node, routesFrom, analysis) {
  const emitted = (analysis.labels && analysis.labels[node.id]) || [];
  const labels = emitted.map((name) => ({ name, known: true }));
  const names = new Set(emitted);
  for (const route of routesFrom.get(node.id) || []) {
    if (!names.has(route.label)) {
      names.add(route.label);
      labels.push({ name: route.label, known: !analysis.labels });
    }
  }
  return labels;
}

function diagnosticCounts(diagnostics) {
  const counts = {};
  for (const diagnostic of diagnostics) {
    if (!diagnostic.node_id) continue;
    const entry = (counts[diagnostic.node_id] ||= { errors: 0, warnings: 0 });
    if (diagnostic.severity === "error") entry.errors += 1;
    else entry.warnings += 1;
  }
  return counts;
}

function resolvePositions(doc, labelsById, regions) {
  const stored = positionsOf(doc);
  const missing = doc.nodes.filter((node) => !stored[node.id]);
  if (!missing.length) return stored;
  if (missing.length === doc.nodes.length) {
    return autoLayout(
      doc.nodes.map((node) => ({ id: node.id, labels: labelsById[node.id] })),
      doc.routes,
      regions,
    );
  }
  const positions = { ...stored };
  const xs = Object.values(stored).map((p) => p.x);
  const right = Math.max(...xs) + NODE_WIDTH + 80;
  for (const node of missing) positions[node.id] = freeSpot(positions, { x: right, y: 40 });
  return positions;
}

// A big graph draws only the nodes in view (Editor.jsx onlyRenderVisibleElements). React Flow draws every node
// once anyway to measure its handles, unless the node says where they are: so a node not yet measured carries
// its estimated size and handles (the label rows are LABEL_ROW high at its bottom, editor.css), which place its
// routes and its minimap box until it scrolls into view and is measured (useNodeMoves then drops them).
const HANDLE = 11; // graph.css .wf-handle: 11 px, 6 px outside the node's edge

function estimatedHandles(labels) {
  const height = estimatedHeight(labels.length);
  const handles = labels.map(({ name }, index) => ({
    id: name,
    type: "source",
    position: "right",
    x: NODE_WIDTH + 6 - HANDLE,
    y: height - (labels.length - index - 0.5) * LABEL_ROW - HANDLE / 2,
    width: HANDLE,
    height: HANDLE,
  }));
  handles.push({ id: "in", type: "target", position: "left", x: -6, y: height / 2 - HANDLE / 2, width: HANDLE, height: HANDLE });
  return handles;
}

export function drawsVisibleOnly(doc) {
  return doc.nodes.length >= DRAW_VISIBLE_FROM;
}

// estimate: give nodes not yet measured their estimated size and handles (a canvas drawing only what is in view).
export function buildNodes(doc, analysis, diagnostics, previous, { canEdit, selectId, runOverlay = null, estimate = false }) {
  const before = new Map(previous.map((node) => [node.id, node]));
  const regions = analysis.control_regions || {};
  const reachable = analysis.reachable ? new Set(analysis.reachable) : null;
  const colors = regionColors(doc);
  const counts = diagnosticCounts(diagnostics);
  const start = doc.start || (doc.nodes[0] && doc.nodes[0].id);
  const routesFrom = new Map();
  for (const route of doc.routes) {
    if (!routesFrom.has(route.source)) routesFrom.set(route.source, []);
    routesFrom.get(route.source).push(route);
  }
  const labelsById = {};
  for (const node of doc.nodes) labelsById[node.id] = labelsOf(node, routesFrom, analysis);
  const positions = resolvePositions(doc, labelsById, regions);
  return doc.nodes.map((node) => {
    const old = before.get(node.id);
    const region = regions[node.id] || [];
    const count = counts[node.id] || { errors: 0, warnings: 0 };
    const built = {
      id: node.id,
      type: "workflow",
      // A node being dragged stays under the pointer while earlier saves come back.
      position: old && old.dragging ? old.position : positions[node.id],
      selected: selectId ? selectId === node.id : Boolean(old && old.selected),
      measured: old && old.measured,
      draggable: canEdit,
      ariaLabel: `${node.kind} node ${node.name || node.id}`,
      data: {
        kind: node.kind,
        title: node.name || node.id,
        subtitle: subtitle(node),
        labels: labelsById[node.id],
        region,
        regionColor: region.length ? colors[region[region.length - 1]] : null,
        errors: count.errors,
        warnings: count.warnings,
        isStart: node.id === start,
        unreachable: reachable ? !reachable.has(node.id) : false,
        run: runOverlay ? runOverlay.nodes[node.id] || IDLE : null,
      },
    };
    if (estimate && !built.measured) {
      built.initialWidth = NODE_WIDTH;
      built.initialHeight = estimatedHeight(built.data.labels.length);
      built.handles = estimatedHandles(built.data.labels);
    }
    // The node as drawn before when nothing about it changed: React Flow then leaves it alone (a save of one
    // node's move among 600 redraws that one).
    return old && sameNode(old, built) ? old : built;
  });
}

const IDLE = { status: "idle", completed: 0, failed: 0, started: 0 };

function sameList(a, b, same = (x, y) => x === y) {
  return a === b || (a.length === b.length && a.every((item, index) => same(item, b[index])));
}

function sameNode(old, built) {
  if (old.position !== built.position && (old.position.x !== built.position.x || old.position.y !== built.position.y)) {
    return false;
  }
  if (old.selected !== built.selected || old.draggable !== built.draggable || old.ariaLabel !== built.ariaLabel) {
    return false;
  }
  const [a, b] = [old.data, built.data];
  return Object.keys(b).every((key) => {
    if (key === "labels") return sameList(a.labels, b.labels, (x, y) => x.name === y.name && x.known === y.known);
    if (key === "region") return sameList(a.region, b.region);
    return a[key] === b[key];
  });
}

function sameEdge(old, built) {
  return old.selected === built.selected && old.source === built.source && old.target === built.target && old.sourceHandle === built.sourceHandle
    && old.type === built.type && old.className === built.className && old.animated === built.animated
    && old.style.stroke === built.style.stroke && old.style.strokeWidth === built.style.strokeWidth
    && old.data.back === built.data.back && old.data.route.label === built.data.route.label;
}

export function buildEdges(doc, analysis, previous) {
  const before = new Map(previous.map((edge) => [edge.id, edge]));
  // The "next item" dash runs forever: on a big graph every frame would then repaint the whole canvas.
  const animate = !drawsVisibleOnly(doc);
  const regions = analysis.control_regions || {};
  const colors = regionColors(doc);
  const kinds = new Map(doc.nodes.map((node) => [node.id, node.kind]));
  return doc.routes.map((route) => {
    const id = `${route.source}::${route.label}`;
    const region = regions[route.source] || [];
    // The route back to the innermost owning foreach closes one item.
    const back = kinds.get(route.target) === "foreach" && region[region.length - 1] === route.target;
    const loop = kinds.get(route.source) === "foreach" && route.label === "loop";
    const color = back ? colors[route.target] : loop ? colors[route.source] : route.label === "error" ? ERROR_ROUTE_COLOR : ROUTE_COLOR;
    const classes = ["wf-edge"];
    if (back) classes.push("wf-edge--back");
    if (loop) classes.push("wf-edge--loop");
    if (route.label === "error") classes.push("wf-edge--error");
    const built = {
      id,
      source: route.source,
      sourceHandle: route.label,
      target: route.target,
      targetHandle: "in",
      type: back ? "back" : "smoothstep",
      selected: Boolean(before.get(id) && before.get(id).selected),
      className: classes.join(" "),
      label: back ? "next item" : undefined,
      animated: back && animate,
      style: { stroke: color, strokeWidth: back || loop ? 2 : 1.6 },
      markerEnd: arrowheadId(color),
      data: { route, back },
      ariaLabel: `route ${route.source} ${route.label} to ${route.target}`,
    };
    // The edge as drawn before when nothing about it changed: React Flow then leaves it alone.
    const old = before.get(id);
    return old && sameEdge(old, built) ? old : built;
  });
}

// A frame around the body of each foreach (the nodes whose control region
// contains it), padded by how many bodies nest inside so frames never cross.
export function buildFrames(doc, analysis, nodes) {
  const regions = analysis.control_regions || {};
  const colors = regionColors(doc);
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const hasBody = new Set(Object.values(regions).flatMap((region) => region));
  const frames = [];
  for (const owner of doc.nodes.filter((node) => node.kind === "foreach")) {
    let depth = 0;
    const boxes = [];
    for (const [nodeId, region] of Object.entries(regions)) {
      const at = region.indexOf(owner.id);
      const drawn = byId.get(nodeId);
      if (at < 0 || !drawn) continue;
      depth = Math.max(depth, region.length - 1 - at + (hasBody.has(nodeId) ? 1 : 0));
      const width = (drawn.measured && drawn.measured.width) || NODE_WIDTH;
      const height = (drawn.measured && drawn.measured.height) || estimatedHeight(drawn.data.labels.length);
      boxes.push({ x1: drawn.position.x, y1: drawn.position.y, x2: drawn.position.x + width, y2: drawn.position.y + height });
    }
    if (!boxes.length) continue;
    const pad = 16 + 16 * depth;
    const x1 = Math.min(...boxes.map((b) => b.x1)) - pad;
    const y1 = Math.min(...boxes.map((b) => b.y1)) - pad - 18;
    const x2 = Math.max(...boxes.map((b) => b.x2)) + pad;
    const y2 = Math.max(...boxes.map((b) => b.y2)) + pad;
    frames.push({ id: owner.id, label: owner.name || owner.id, color: colors[owner.id], x: x1, y: y1, width: x2 - x1, height: y2 - y1 });
  }
  return frames;
}

// Routes leaving one node each get their own vertical channel (where a step
// edge turns), so two routes from neighbouring labels stay tellable apart
// instead of sharing one line. Upward routes turn later the lower their
// label, downward ones the higher: fanned-out routes then never cross.
export function withChannels(edges, nodes) {
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const siblings = new Map();
  for (const edge of edges) {
    const source = byId.get(edge.source);
    const target = byId.get(edge.target);
    if (edge.type !== "smoothstep" || !source || !target || !source.position || !target.position) continue;
    const labels = source.data.labels.map((label) => label.name);
    const index = Math.max(0, labels.indexOf(edge.sourceHandle));
    const height = (source.measured && source.measured.height) || estimatedHeight(labels.length);
    const handleY = source.position.y + height - (labels.length - index - 0.5) * LABEL_ROW;
    const targetHeight = (target.measured && target.measured.height) || estimatedHeight(target.data.labels.length);
    const up = target.position.y + targetHeight / 2 < handleY;
    if (!siblings.has(edge.source)) siblings.set(edge.source, []);
    siblings.get(edge.source).push({ id: edge.id, key: up ? labels.length + index : -index });
  }
  const steps = new Map();
  for (const list of siblings.values()) {
    if (list.length < 2) continue;
    list.sort((a, b) => a.key - b.key);
    list.forEach(({ id }, rank) => steps.set(id, 0.25 + (0.5 * rank) / (list.length - 1)));
  }
  return edges.map((edge) =>
    steps.has(edge.id) ? { ...edge, pathOptions: { ...(edge.pathOptions || {}), stepPosition: steps.get(edge.id) } } : edge,
  );
}
