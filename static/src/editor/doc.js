// Structural edits of the workflow document (plain JSON). These only move
// data around: what a change *means* is the analyzer's answer after the save.

export function clone(value) {
  return structuredClone(value);
}

export function positionsOf(doc) {
  return (doc.metadata && doc.metadata.positions) || {};
}

function withPositions(doc, positions) {
  return { ...doc, metadata: { ...(doc.metadata || {}), positions } };
}

// Node ids become path segments (context.foreach.<id>), so keep them to the
// characters a bare path key allows.
export function slug(text) {
  const cleaned = String(text || "node")
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "_")
    .replace(/^_+|_+$/g, "");
  return cleaned || "node";
}

export function uniqueId(doc, hint) {
  const base = slug(hint);
  const taken = new Set(doc.nodes.map((node) => node.id));
  if (!taken.has(base)) return base;
  for (let n = 2; ; n += 1) {
    const candidate = `${base}_${n}`;
    if (!taken.has(candidate)) return candidate;
  }
}

export function addNode(doc, template, position) {
  const id = uniqueId(doc, template.id_hint || template.node.kind);
  const node = { ...clone(template.node), id };
  const positions = { ...positionsOf(doc), [id]: position };
  return { doc: withPositions({ ...doc, nodes: [...doc.nodes, node] }, positions), id };
}

export function moveNodes(doc, moved) {
  return withPositions(doc, { ...positionsOf(doc), ...moved });
}

// A label leads to exactly one node, so connecting a label that already has a
// route re-targets it instead of adding a second one.
export function connect(doc, source, label, target) {
  const routes = doc.routes.filter((route) => !(route.source === source && route.label === label));
  routes.push({ source, label, target });
  return { ...doc, routes };
}

export function removeRoutes(doc, keys) {
  const drop = new Set(keys);
  return { ...doc, routes: doc.routes.filter((route) => !drop.has(routeKey(route))) };
}

export function removeNodes(doc, ids) {
  const drop = new Set(ids);
  const positions = { ...positionsOf(doc) };
  for (const id of drop) delete positions[id];
  const next = {
    ...doc,
    nodes: doc.nodes.filter((node) => !drop.has(node.id)),
    routes: doc.routes.filter((route) => !drop.has(route.source) && !drop.has(route.target)),
  };
  if (next.start && drop.has(next.start)) next.start = null;
  return withPositions(next, positions);
}

export function routeKey(route) {
  return `${route.source}\u0000${route.label}`;
}

export function sameDocument(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}
