// Automatic layout for documents that carry no canvas positions (imported or
// written by hand). Left-to-right, so label handles on the right of a node
// fan out towards the nodes they route to.
import { Graph, layout } from "@dagrejs/dagre";

export const NODE_WIDTH = 220;

export function estimatedHeight(labelCount) {
  return 62 + 24 * Math.max(1, labelCount);
}

// nodes: [{id, labels}], routes: [{source, target}], regions: {id: [foreach ids]}
// -> {id: {x, y}}. Loop bodies become dagre clusters, so each body is laid out
// as one block and its frame encloses nothing but the body.
export function autoLayout(nodes, routes, regions = {}) {
  try {
    return runLayout(nodes, routes, regions);
  } catch {
    // dagre's compound mode rejects some unusual graphs; a flat layout still helps.
    return runLayout(nodes, routes, {});
  }
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
  return positions;
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
