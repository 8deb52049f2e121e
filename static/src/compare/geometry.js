// Geometry of the comparison canvas's routes. Every node there has one
// source and one target handle, so two routes between the same pair of nodes
// (a branch whose "auto" and "review" both go to one node, a changed route
// drawn with its "before") would be the same curve with their labels on top
// of each other. Routes between one pair are fanned out instead: each is
// bent to its own side of the straight line by a multiple of SPACING, and its
// label sits on its own curve's middle. Pure functions, so they are unit tested.

export const SPACING = 36;

function pairKey(a, b) {
  return a < b ? `${a}\u0000${b}` : `${b}\u0000${a}`;
}

// id -> { offset, flip }: offset is the signed distance of the curve's middle
// from the straight line, measured on the left of the pair's canonical
// direction (the smaller node id to the larger), so a route from B to A and
// one from A to B land on different sides. flip is -1 when the edge runs
// against that direction. A route alone between its two nodes has offset 0.
export function parallelOffsets(edges, spacing = SPACING) {
  const groups = new Map();
  for (const edge of edges) {
    if (edge.source === edge.target) continue;
    const key = pairKey(edge.source, edge.target);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(edge);
  }
  const offsets = new Map();
  for (const group of groups.values()) {
    // A stable order (by id) so the drawing does not change with the order routes are listed in.
    const sorted = [...group].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    sorted.forEach((edge, index) => {
      const flip = edge.source < edge.target ? 1 : -1;
      const offset = sorted.length === 1 ? 0 : (index - (sorted.length - 1) / 2) * spacing;
      offsets.set(edge.id, { offset, flip });
    });
  }
  return offsets;
}

function cubicAt(p0, c1, c2, p3, t) {
  const u = 1 - t;
  return u * u * u * p0 + 3 * u * u * t * c1 + 3 * u * t * t * c2 + t * t * t * p3;
}

// A cubic curve from the source handle (on a node's right) to the target
// handle (on a node's left), leaving and arriving horizontally like React
// Flow's own bezier edges, with both control points moved along the normal of
// the straight line so that the curve's middle (t = 0.5, where the label goes)
// is exactly `offset` away from it. Returns the SVG path and the label point.
export function offsetCurve({ sourceX, sourceY, targetX, targetY, offset = 0, flip = 1 }) {
  const dx = targetX - sourceX;
  const dy = targetY - sourceY;
  const length = Math.hypot(dx, dy) || 1;
  // The left-hand normal of the canonical direction (flip turns it back for reversed edges).
  const nx = (-dy / length) * flip;
  const ny = (dx / length) * flip;
  const reach = Math.max(Math.abs(dx) / 2, 40);
  // The middle of a cubic moves by 3/4 of a shift applied to both control points.
  const shift = offset / 0.75;
  const c1 = [sourceX + reach + nx * shift, sourceY + ny * shift];
  const c2 = [targetX - reach + nx * shift, targetY + ny * shift];
  const labelX = cubicAt(sourceX, c1[0], c2[0], targetX, 0.5);
  const labelY = cubicAt(sourceY, c1[1], c2[1], targetY, 0.5);
  const path = `M ${sourceX} ${sourceY} C ${c1[0]} ${c1[1]} ${c2[0]} ${c2[1]} ${targetX} ${targetY}`;
  return { path, labelX, labelY };
}
