// Reading the workflow document (plain JSON). Editing it is the server's job:
// the canvas sends named operations (see queue.js) and draws the answer.

export function positionsOf(doc) {
  return (doc.metadata && doc.metadata.positions) || {};
}

export function routeOps(routes) {
  return routes.map((route) => ({ op: "disconnect", source: route.source, label: route.label }));
}
