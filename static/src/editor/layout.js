// Automatic layout for documents that carry no canvas positions (imported or
// written by hand). Left-to-right, so label handles on the right of a node
// fan out towards the nodes they route to.
import { Graph, layout } from "@dagrejs/dagre";

import { rowLayout } from "./rows.js";

// From this many nodes, always the layered layout that wraps into rows (rows.js), without trying dagre first:
// dagre takes seconds there. Below it, rows too when dagre's layout does not fit the canvas (autoLayout).
export const ROWS_FROM = 80;

// From this many nodes, the canvas draws only the nodes and routes in view (graph.js drawsVisibleOnly).
export const DRAW_VISIBLE_FROM = ROWS_FROM;

export const NODE_WIDTH = 220;

// The height of a label row at the bottom of a node (graph.css .wf-label), where its handle sits.
export const LABEL_ROW = 24;

// The smallest text on the canvas, in px (editor.css: node kind, labels, route labels, frames).
export const SMALLEST_FONT_PX = 13;

// The smallest zoom at which every text on the canvas is still 12 px on screen
// (12 / SMALLEST_FONT_PX, rounded up); neither fit, layout nor the wheel goes below
// it (the minimap and scrolling show the rest).
export const READABLE_ZOOM = Math.ceil((12 / SMALLEST_FONT_PX) * 1000) / 1000;

// The minimap's size: it sits top right, and the first fit starts the drawing below it.
export const MINIMAP = { width: 132, height: 80 };

// A fitted viewport, unless it zooms out below READABLE_ZOOM: then the
// readable zoom. Along each axis where the graph fits the canvas at that zoom
// (inside the margins, which are tighter than the fit's padding) it is centred,
// so the whole of it shows; where it does not, its start (left or top) shows.
// area: the canvas's {width, height}; margin: {left, top, bottom} (right = left).
export function readableViewport(fitted, bounds, margin, area) {
  if (fitted.zoom >= READABLE_ZOOM) return fitted;
  const zoom = READABLE_ZOOM;
  const place = (start, size, from, room) => {
    const spare = room - size * zoom;
    return (spare >= 0 ? from + spare / 2 : from) - start * zoom;
  };
  const width = area ? area.width - 2 * margin.left : -Infinity;
  const height = area ? area.height - margin.top - (margin.bottom ?? 0) : -Infinity;
  return {
    x: place(bounds.x, bounds.width ?? 0, margin.left, width),
    y: place(bounds.y, bounds.height ?? 0, margin.top, height),
    zoom,
  };
}

const GAP = 24;

function overlaps(a, b) {
  return a.x < b.x + b.width + GAP && b.x < a.x + a.width + GAP && a.y < b.y + b.height + GAP && b.y < a.y + a.height + GAP;
}

// The free place nearest to where a node was dropped: the drop point if it
// touches no node, else the closest spot on rings around it that does.
export function dropSpot(boxes, preferred, size = { width: NODE_WIDTH, height: 110 }) {
  const at = (x, y) => ({ x: Math.round(x), y: Math.round(y), ...size });
  const free = (box) => !boxes.some((other) => overlaps(box, other));
  const first = at(preferred.x, preferred.y);
  if (free(first)) return { x: first.x, y: first.y };
  const step = 40;
  for (let ring = 1; ring < 60; ring += 1) {
    const candidates = [];
    for (let i = -ring; i <= ring; i += 1) {
      candidates.push([i, -ring], [i, ring], [-ring, i], [ring, i]);
    }
    const spots = candidates
      .map(([dx, dy]) => at(preferred.x + dx * step, preferred.y + dy * step))
      .filter(free)
      .sort((a, b) => Math.hypot(a.x - preferred.x, a.y - preferred.y) - Math.hypot(b.x - preferred.x, b.y - preferred.y));
    if (spots.length) return { x: spots[0].x, y: spots[0].y };
  }
  return { x: first.x, y: first.y };
}

// A node's drawn height before it is measured (editor.css: head, title, subtitle, then a row per label).
export function estimatedHeight(labelCount) {
  return 88 + 24 * Math.max(1, labelCount);
}

// The canvas's drawing area at READABLE_ZOOM, in flow px, when the caller does not say (a layout made before the
// canvas is measured): a 1600 x 1000 window's canvas between the palette and the inspector, less the band under
// the minimap where the fit starts the drawing (hooks.js useFitGraph). layoutAll passes the real one.
export const DEFAULT_VIEW = { width: 1000, height: 650 };

// The shapes a wrapped layout tries, as fractions of the view's own width / height: a loop body's rows are
// shaped first and its foreach and frame then sit beside it, so a body shaped like the screen makes a whole
// wider than the screen; narrower bodies make up for that. The best fit wins.
const SHAPES = [1, 0.75, 0.55, 0.4];

// The zoom at which a laid-out graph fills `view` (the larger, the more of it one screen shows at once).
export function fitZoom(nodes, positions, view = DEFAULT_VIEW) {
  const box = extent(nodes, positions);
  return Math.min(view.width / Math.max(box.width, 1), view.height / Math.max(box.height, 1));
}

// The box around laid-out nodes (their sizes estimated): {x, y, width, height}.
export function extent(nodes, positions) {
  let [x1, y1, x2, y2] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const node of nodes) {
    const at = positions[node.id];
    if (!at) continue;
    x1 = Math.min(x1, at.x);
    y1 = Math.min(y1, at.y);
    x2 = Math.max(x2, at.x + NODE_WIDTH);
    y2 = Math.max(y2, at.y + estimatedHeight(node.labels.length));
  }
  return x1 === Infinity ? { x: 0, y: 0, width: 0, height: 0 } : { x: x1, y: y1, width: x2 - x1, height: y2 - y1 };
}

// nodes: [{id, labels}], routes: [{source, target}], regions: {id: [foreach ids]}, view: the canvas's area at
// READABLE_ZOOM ({width, height} in flow px) -> {id: {x, y}}.
//
// A graph is laid out to fit the canvas's shape (issue 34: a 20-node chain was one row 6,820 px wide, 3 nodes
// in view). Small graphs: dagre (loop bodies as clusters, so each body is one block and its frame encloses
// nothing but the body), kept when it fits the view at a readable zoom or fits it better than rows would;
// otherwise, and always for big graphs (dagre takes seconds there), the layers wrap into rows (rows.js), in
// reading order, each loop body a block inside its loop.
export function autoLayout(nodes, routes, regions = {}, view = DEFAULT_VIEW) {
  if (nodes.length >= ROWS_FROM) return screenShaped(nodes, routes, regions, view).positions;
  let layered;
  try {
    layered = runLayout(nodes, routes, regions);
  } catch {
    // dagre's compound mode rejects some unusual graphs; a flat layout still helps.
    layered = runLayout(nodes, routes, {});
  }
  const zoom = fitZoom(nodes, layered, view);
  if (zoom >= READABLE_ZOOM) return layered;
  const wrapped = screenShaped(nodes, routes, regions, view);
  return wrapped.zoom > zoom ? wrapped.positions : layered;
}

// The row layout (rows.js) whose whole fits `view` best, of the SHAPES tried: {positions, zoom}.
function screenShaped(nodes, routes, regions, view) {
  const sized = nodes.map((node) => ({ id: node.id, width: NODE_WIDTH, height: estimatedHeight(node.labels.length) }));
  const aspect = view.width / view.height;
  let best = null;
  for (const shape of SHAPES) {
    const positions = rowLayout(sized, routes, regions, aspect * shape);
    const zoom = fitZoom(nodes, positions, view);
    // Narrower shapes only help while they fit better (a big body's own shape is the whole's): the first that
    // does not ends the search, so a big graph is laid out about twice, not once per shape.
    if (best && zoom <= best.zoom + 1e-9) break;
    best = { positions, zoom };
  }
  untangle(nodes, routes, regions, best.positions);
  return best;
}

function runLayout(nodes, routes, regions) {
  const clustered = Object.values(regions).some((region) => region.length);
  const graph = new Graph({ multigraph: true, compound: clustered });
  graph.setGraph({ rankdir: "LR", nodesep: 40, ranksep: 90, marginx: 20, marginy: 20 });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const node of nodes) {
    graph.setNode(node.id, { width: NODE_WIDTH, height: estimatedHeight(node.labels.length) });
  }
  const ids = new Set(nodes.map((node) => node.id));
  if (clustered) {
    const cluster = (owner) => `\u0000body:${owner}`;
    for (const node of nodes) {
      const region = regions[node.id] || [];
      region.forEach((owner, depth) => {
        if (!graph.hasNode(cluster(owner))) graph.setNode(cluster(owner), {});
        if (depth > 0) graph.setParent(cluster(owner), cluster(region[depth - 1]));
      });
      if (region.length) graph.setParent(node.id, cluster(region[region.length - 1]));
    }
  }
  routes.forEach((route, index) => {
    if (ids.has(route.source) && ids.has(route.target)) {
      graph.setEdge(route.source, route.target, {}, `r${index}`);
    }
  });
  layout(graph);
  const positions = {};
  for (const node of nodes) {
    const placed = graph.node(node.id);
    positions[node.id] = {
      x: Math.round(placed.x - placed.width / 2),
      y: Math.round(placed.y - placed.height / 2),
    };
  }
  untangle(nodes, routes, regions, positions);
  return positions;
}

// Dagre orders a rank's nodes without knowing the order of a node's label
// handles: a branch's first label ("large") could lead to the lower of two
// targets and its second to the upper, so the two edges cross and share their
// bend (which label goes where is then ambiguous). Where a node's targets sit in
// one column, next to each other and in the same loop body, they are restacked
// in the order of the handles that reach them.
function untangle(nodes, routes, regions, positions) {
  const height = new Map(nodes.map((node) => [node.id, estimatedHeight(node.labels.length)]));
  const region = (id) => JSON.stringify(regions[id] || []);
  // Routes by source, found once (a filter per node was 360,000 steps at 600 nodes).
  const from = new Map();
  for (const route of routes) {
    if (!from.has(route.source)) from.set(route.source, []);
    from.get(route.source).push(route);
  }
  for (const node of nodes) {
    const handle = (route) => node.labels.findIndex((label) => label.name === route.label);
    const targets = [];
    const handled = (from.get(node.id) || []).filter((r) => handle(r) >= 0);
    for (const route of handled.sort((a, b) => handle(a) - handle(b))) {
      if (route.target !== node.id && positions[route.target] && !targets.includes(route.target)) {
        targets.push(route.target);
      }
    }
    const columns = new Map();
    for (const id of targets) {
      const key = `${positions[id].x} ${region(id)}`;
      columns.set(key, [...(columns.get(key) || []), id]);
    }
    for (const group of columns.values()) {
      if (group.length < 2) continue;
      const stacked = [...group].sort((a, b) => positions[a].y - positions[b].y);
      const top = positions[stacked[0]].y;
      const last = stacked[stacked.length - 1];
      const bottom = positions[last].y + height.get(last);
      const between = nodes.some((other) => !group.includes(other.id) && positions[other.id]
        && positions[other.id].x === positions[group[0]].x
        && positions[other.id].y < bottom && positions[other.id].y + height.get(other.id) > top);
      if (between || stacked.every((id, i) => id === group[i])) continue;
      const gaps = stacked.slice(1).map((id, i) => positions[id].y - positions[stacked[i]].y - height.get(stacked[i]));
      let y = top;
      group.forEach((id, i) => {
        positions[id] = { x: positions[id].x, y };
        y += height.get(id) + (gaps[i] ?? 0);
      });
    }
  }
}

// Places a node next to the existing ones when there is no drop point
// (keyboard "add" from the palette).
export function freeSpot(positions, preferred) {
  const taken = Object.values(positions);
  let { x, y } = preferred;
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const clash = taken.some((p) => Math.abs(p.x - x) < NODE_WIDTH && Math.abs(p.y - y) < 90);
    if (!clash) break;
    y += 110;
  }
  return { x: Math.round(x), y: Math.round(y) };
}

// How far right of the selected node a new node goes (room for the route's curve), and the
// clearance it keeps from other nodes and from routes.
export const BESIDE_GAP = 80;
const CLEARANCE = 16;

function inside(point, box, margin) {
  return point.x > box.x - margin && point.x < box.x + box.width + margin
    && point.y > box.y - margin && point.y < box.y + box.height + margin;
}

// Where a node added from the palette goes when a node is selected: right of
// it, level with its free output (the label handle no route leaves yet), so the
// route from that handle is a short straight line. Never on another node (with
// CLEARANCE around it) nor on a route: `routes` are the drawn routes as
// polylines (points sampled along each path). When that place is taken, the
// nearest free one in that column (down first), then columns further right.
// anchor: {x, y, width, height} of the selected node; handleY: its free
// output's y (flow coordinates); boxes: the other nodes; size: the new node's.
export function besideOutput({ anchor, handleY, boxes, routes = [], size = { width: NODE_WIDTH, height: 110 } }) {
  // The new node's input handle is half way down its left side; line it up with the output.
  const top = Math.round(handleY - size.height / 2);
  const free = (box) =>
    !boxes.some((other) => box.x < other.x + other.width + CLEARANCE && other.x < box.x + box.width + CLEARANCE
      && box.y < other.y + other.height + CLEARANCE && other.y < box.y + box.height + CLEARANCE)
    && !routes.some((line) => line.some((point) => inside(point, box, CLEARANCE)));
  const step = 20;
  for (let column = 0; column < 40; column += 1) {
    const x = Math.round(anchor.x + anchor.width + BESIDE_GAP + column * (size.width / 2));
    for (let ring = 0; ring < 80; ring += 1) {
      for (const dy of ring ? [ring * step, -ring * step] : [0]) {
        const box = { x, y: top + dy, ...size };
        if (free(box)) return { x: box.x, y: box.y };
      }
    }
  }
  return { x: Math.round(anchor.x + anchor.width + BESIDE_GAP), y: top };
}
