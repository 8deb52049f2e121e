// Automatic layout of a graph too big for one row (layout.js autoLayout hands over from ROWS_FROM nodes, and
// below that when dagre's layout does not fit the canvas at a readable zoom and rows fit it better): dagre took 1.3 s
// for 600 nodes and drew a chain as one row 190,000 px wide, so the first view showed 3 nodes and the
// minimap an empty box (issue 34). Here the graph is laid out in layers left to right, as dagre does, but the
// layers wrap into rows, so the whole is about as wide as a screen is wide for its height; in linear time.
//
// A loop body is laid out the same way as one block (its frame encloses the body alone), and the block is
// then one item among its loop's neighbours: a foreach, then its body, then what follows "done".

const COLUMN_GAP = 90; // between layers (dagre's ranksep in layout.js)
const STACK_GAP = 40; // between items of one layer (dagre's nodesep)
const ROW_GAP = 90; // between wrapped rows: room for the routes that return to the left
// Wider than high, as a screen (and the minimap) is; a row is never narrower than its widest layer. The caller
// may ask for another shape (layout.js screenShaped tries a few, for the whole to fit the canvas best).
export const ASPECT = 1.6;
// Room around a body for its frame (graph.js buildFrames: 16 px per nesting level, a title row on top).
const FRAME_PAD = 28;
const FRAME_LEVEL = 16;
const FRAME_TITLE = 22;

// items: [{id, width, height}]; edges: [[from, to]] between item ids -> {id: {x, y}} and the block's size.
function layers(items, edges) {
  const ids = items.map((item) => item.id);
  const out = new Map(ids.map((id) => [id, []]));
  for (const [from, to] of edges) if (from !== to && out.has(from) && out.has(to)) out.get(from).push(to);
  // Edges that close a cycle (found by a depth-first walk from each unvisited item, in order) are left out,
  // so the others order the items: each item goes one layer right of its furthest predecessor.
  const state = new Map();
  const order = [];
  const forward = new Map(ids.map((id) => [id, []]));
  for (const root of ids) {
    if (state.has(root)) continue;
    const stack = [[root, 0]];
    state.set(root, 1);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const [id, next] = top;
      const targets = out.get(id);
      if (next < targets.length) {
        top[1] += 1;
        const target = targets[next];
        if (!state.has(target)) {
          forward.get(id).push(target);
          state.set(target, 1);
          stack.push([target, 0]);
        } else if (state.get(target) === 2) {
          forward.get(id).push(target);
        }
      } else {
        state.set(id, 2);
        order.push(id);
        stack.pop();
      }
    }
  }
  const layer = new Map(ids.map((id) => [id, 0]));
  for (const id of order.reverse()) {
    for (const target of forward.get(id)) layer.set(target, Math.max(layer.get(target), layer.get(id) + 1));
  }
  return { layer, forward };
}

function placeBlock(items, edges, aspect) {
  const byId = new Map(items.map((item) => [item.id, item]));
  const { layer, forward } = layers(items, edges);
  const columns = [];
  for (const item of items) {
    const index = layer.get(item.id);
    while (columns.length <= index) columns.push([]);
    columns[index].push(item.id);
  }
  // Within a layer, items follow the mean place of their predecessors (fewer crossings), else their order.
  const rank = new Map();
  const predecessors = new Map(items.map((item) => [item.id, []]));
  for (const [id, targets] of forward) for (const target of targets) predecessors.get(target).push(id);
  columns.forEach((column) => {
    const key = (id) => {
      const placed = predecessors.get(id).filter((p) => rank.has(p));
      return placed.length ? placed.reduce((sum, p) => sum + rank.get(p), 0) / placed.length : Infinity;
    };
    const keys = new Map(column.map((id, at) => [id, [key(id), at]]));
    column.sort((a, b) => keys.get(a)[0] - keys.get(b)[0] || keys.get(a)[1] - keys.get(b)[1]);
    column.forEach((id, at) => rank.set(id, at));
  });
  const sizes = columns.map((column) => ({
    width: Math.max(...column.map((id) => byId.get(id).width)),
    height: column.reduce((sum, id) => sum + byId.get(id).height, 0) + STACK_GAP * (column.length - 1),
  }));
  const area = sizes.reduce((sum, size) => sum + (size.width + COLUMN_GAP) * (size.height + ROW_GAP), 0);
  const rowWidth = Math.max(Math.sqrt(area * aspect), ...sizes.map((size) => size.width));
  // Greedy rows: a layer that would pass the row's width starts the next row, unless the row holds little yet
  // (a foreach before its wide body stays beside it).
  const rows = [];
  let current = null;
  sizes.forEach((size, index) => {
    if (!current || (current.width > rowWidth / 4 && current.width + size.width > rowWidth)) {
      current = { columns: [], width: 0, height: 0 };
      rows.push(current);
    }
    current.columns.push({ index, x: current.width });
    current.width += size.width + COLUMN_GAP;
    current.height = Math.max(current.height, size.height);
    if (!columns[index].some((id) => byId.get(id).block)) current.plain = Math.max(current.plain || 0, size.height);
  });
  const positions = {};
  let top = 0;
  let width = 0;
  for (const row of rows) {
    for (const { index, x } of row.columns) {
      const column = columns[index];
      // At the top of the row (a foreach level with the first row of its body, where the view starts), layers
      // without a body centred on each other, so a chain's routes run straight.
      let y = top + Math.max(0, ((row.plain || 0) - sizes[index].height) / 2);
      for (const id of column) {
        const item = byId.get(id);
        positions[id] = { x: x + (sizes[index].width - item.width) / 2, y };
        y += item.height + STACK_GAP;
      }
    }
    width = Math.max(width, row.width - COLUMN_GAP);
    top += row.height + ROW_GAP;
  }
  return { positions, width, height: Math.max(0, top - ROW_GAP) };
}

// nodes: [{id, width, height}], routes: [{source, target}], regions: {id: [foreach ids, outermost first]}
// -> {id: {x, y}} (top left corners). aspect: the width / height each block's rows aim at.
export function rowLayout(nodes, routes, regions = {}, aspect = ASPECT) {
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const known = new Set(byId.keys());
  const owners = (id) => (regions[id] || []).filter((owner) => known.has(owner));
  // The item standing for `id` among the members of the body of `path` (its owners at that level).
  const itemAt = (id, depth) => {
    const stack = owners(id);
    return stack.length > depth ? `\u0000body:${stack[depth]}` : id;
  };
  const place = (members, depth) => {
    const items = [];
    const blocks = new Map();
    for (const id of members) {
      const item = itemAt(id, depth);
      if (item === id) {
        items.push(byId.get(id));
      } else {
        if (!blocks.has(item)) blocks.set(item, []);
        blocks.get(item).push(id);
      }
    }
    const laid = new Map();
    for (const [item, inside] of blocks) {
      const block = place(inside, depth + 1);
      const pad = FRAME_PAD + FRAME_LEVEL * block.levels;
      laid.set(item, { ...block, pad });
      items.push({ id: item, width: block.width + 2 * pad, height: block.height + 2 * pad + FRAME_TITLE, block: true });
    }
    const memberSet = new Set(members);
    const edges = [];
    for (const route of routes) {
      if (!memberSet.has(route.source) || !memberSet.has(route.target)) continue;
      const from = itemAt(route.source, depth);
      const to = itemAt(route.target, depth);
      if (from !== to) edges.push([from, to]);
    }
    // A body follows its foreach: the route into it leaves by "loop" and comes back to it.
    for (const item of blocks.keys()) {
      const owner = item.slice("\u0000body:".length);
      if (memberSet.has(owner)) edges.push([owner, item]);
    }
    const block = placeBlock(items, edges, aspect);
    const positions = {};
    let levels = 0;
    for (const [id, at] of Object.entries(block.positions)) {
      const inner = laid.get(id);
      if (!inner) {
        positions[id] = at;
        continue;
      }
      levels = Math.max(levels, inner.levels + 1);
      for (const [nodeId, spot] of Object.entries(inner.positions)) {
        positions[nodeId] = { x: at.x + inner.pad + spot.x, y: at.y + inner.pad + FRAME_TITLE + spot.y };
      }
    }
    return { positions, width: block.width, height: block.height, levels };
  };
  const laid = place([...byId.keys()], 0).positions;
  const positions = {};
  for (const [id, at] of Object.entries(laid)) positions[id] = { x: Math.round(at.x), y: Math.round(at.y) };
  return positions;
}
