// The canvas's hooks: each owns one concern of the editor island, so the
// Canvas component only puts them together. The document and its history
// live in the store (store.js); these hold what only the drawing needs.
import {
  applyEdgeChanges,
  applyNodeChanges,
  getViewportForBounds,
  useUpdateNodeInternals,
} from "@xyflow/react";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { useStore } from "zustand";

import { request } from "./api.js";
import { positionsOf, routeOps } from "./doc.js";
import { emit, EVENTS, notice } from "./events.js";
import { isTyping } from "./keys.js";
import { buildEdges, buildFrames, buildNodes, drawsVisibleOnly, withChannels } from "./graph.js";
import {
  autoLayout,
  besideOutput,
  DEFAULT_VIEW,
  dropSpot,
  estimatedHeight,
  NODE_WIDTH,
  READABLE_ZOOM,
  readableViewport,
} from "./layout.js";

// The nodes and edges React Flow draws, rebuilt whenever the document or what
// the server says about it changes; React Flow's own changes (selection,
// dragging) apply in between.
/** @param {import("zustand").StoreApi<any>} store */
export function useDrawing(store, { canEdit, runOverlay }) {
  const doc = useStore(store, (s) => s.doc);
  const analysis = useStore(store, (s) => s.analysis);
  const diagnostics = useStore(store, (s) => s.diagnostics);
  const [nodes, setNodes] = useState([]);
  const [edges, setEdges] = useState([]);

  useEffect(() => {
    if (!doc || !analysis) return;
    const selectId = store.getState().takePendingSelect(doc);
    const estimate = drawsVisibleOnly(doc);
    setNodes((previous) => buildNodes(doc, analysis, diagnostics, previous, { canEdit, selectId, runOverlay, estimate }));
    setEdges((previous) => buildEdges(doc, analysis, previous));
  }, [store, doc, analysis, diagnostics, canEdit, runOverlay]);

  const frames = useMemo(() => (doc && analysis ? buildFrames(doc, analysis, nodes) : []), [doc, analysis, nodes]);

  // Back-edges run under the frame of the body they close.
  const drawnEdges = useMemo(() => {
    const bottoms = new Map(frames.map((frame) => [frame.id, frame.y + frame.height]));
    const placed = edges.map((edge) =>
      edge.data.back && bottoms.has(edge.target)
        ? { ...edge, data: { ...edge.data, below: bottoms.get(edge.target) } }
        : edge,
    );
    return withChannels(placed, nodes);
  }, [edges, frames, nodes]);

  const onEdgesChange = useCallback(
    (changes) => setEdges((current) => applyEdgeChanges(changes.filter((c) => c.type !== "remove"), current)),
    [],
  );

  // Shows one node selected (and nothing else), as when a panel asks for it.
  const selectOnly = useCallback((nodeId) => {
    setNodes((current) => current.map((node) => ({ ...node, selected: node.id === nodeId })));
    setEdges((current) => current.map((edge) => ({ ...edge, selected: false })));
  }, []);

  useHandleRefresh(nodes);
  return { doc, analysis, nodes, setNodes, frames, drawnEdges, onEdgesChange, selectOnly };
}

// React Flow measures handles when a node's size changes. Renaming a label
// (a branch case, an interrupt answer) keeps the size, so without this the
// renamed handle cannot start a connection.
function useHandleRefresh(nodes) {
  const updateNodeInternals = useUpdateNodeInternals();
  const handleSets = useRef(new Map());
  useEffect(() => {
    const current = new Map(nodes.map((node) => [node.id, node.data.labels.map((l) => l.name).join("\n")]));
    const changed = nodes
      .filter((node) => handleSets.current.has(node.id) && handleSets.current.get(node.id) !== current.get(node.id))
      .map((node) => node.id);
    handleSets.current = current;
    if (changed.length) updateNodeInternals(changed);
  }, [nodes, updateNodeInternals]);
}

// Node changes from React Flow: applied to the drawing at once; a finished
// drag (or, for keyboard moves, a short pause) stores the new places as one
// move_nodes edit.
export function useNodeMoves({ canEdit, flow, store, setNodes }) {
  const dragging = useRef(false);
  const pendingMoves = useRef({});
  const moveTimer = useRef(null);
  return useCallback(
    (changes) => {
      const kept = changes.filter((c) => c.type !== "remove");
      setNodes((current) => withoutEstimates(applyNodeChanges(kept, current), kept));
      if (!canEdit) return;
      if (kept.some((c) => c.type === "position" && c.dragging)) dragging.current = true;
      const settled = kept.filter((c) => c.type === "position" && c.position && c.dragging === false);
      if (!settled.length) return;
      for (const change of settled) {
        pendingMoves.current[change.id] = { x: Math.round(change.position.x), y: Math.round(change.position.y) };
      }
      const flush = () => {
        const moved = pendingMoves.current;
        pendingMoves.current = {};
        // A graph drawn by automatic layout (no stored places) keeps its drawing:
        // the first move also stores where the other nodes are shown.
        const stored = positionsOf(store.getState().doc || {});
        for (const node of flow.getNodes()) {
          if (!stored[node.id] && !moved[node.id]) {
            moved[node.id] = { x: Math.round(node.position.x), y: Math.round(node.position.y) };
          }
        }
        // Only the places that changed travel: a drag is one small operation.
        if (Object.keys(moved).length) store.getState().send([{ op: "move_nodes", positions: moved }]);
      };
      window.clearTimeout(moveTimer.current);
      if (dragging.current) {
        dragging.current = false;
        flush();
      } else {
        moveTimer.current = window.setTimeout(flush, 400);
      }
    },
    [canEdit, flow, store, setNodes],
  );
}

// A node measured in view drops the size and handles estimated for it (graph.js buildNodes): React Flow would
// otherwise take the estimated handles again over the measured ones whenever the node changes.
function withoutEstimates(nodes, changes) {
  const measured = new Set(changes.filter((c) => c.type === "dimensions" && c.dimensions).map((c) => c.id));
  if (!measured.size) return nodes;
  return nodes.map((node) => {
    if (!measured.has(node.id) || !node.handles) return node;
    const { handles: _handles, initialWidth: _width, initialHeight: _height, ...rest } = node;
    return rest;
  });
}

// Fit the whole drawing: nodes, the loop frames around them and the
// back-edges under the frames, below the minimap (top right; the other
// controls are in the toolbar, above the drawing). Fits once by itself, when
// the first drawing is measured.
/** @param {{flow: any, store: import("zustand").StoreApi<any>, root: any, wrapper: any, frames: any, nodes: any}} options */
export function useFitGraph({ flow, store, root, wrapper, frames, nodes }) {
  const framesRef = useRef(frames);
  useEffect(() => {
    framesRef.current = frames;
  }, [frames]);
  const fitted = useStore(store, (s) => s.fitted);
  // The viewport the last fit chose: a view still there is the fit's, not one the person panned or zoomed to.
  const lastFit = useRef(null);

  const fitGraph = useCallback(
    (duration = 0) => {
      const drawn = flow.getNodes();
      if (!drawn.length || !wrapper.current) return;
      const box = flow.getNodesBounds(drawn);
      let [x1, y1, x2, y2] = [box.x, box.y, box.x + box.width, box.y + box.height];
      for (const frame of framesRef.current) {
        // A loop's back-edge ("next item") runs round into its for-each node's input, left of that node.
        x1 = Math.min(x1, frame.x, box.x - 32);
        y1 = Math.min(y1, frame.y);
        x2 = Math.max(x2, frame.x + frame.width);
        y2 = Math.max(y2, frame.y + frame.height + 30);
      }
      const { width, height, top } = drawingArea(wrapper.current);
      const bounds = { x: x1, y: y1, width: x2 - x1, height: y2 - y1 };
      const fit = getViewportForBounds(bounds, width, height, 0.05, 1.1, { top: `${top}px`, bottom: "24px", x: "5%" });
      // Never below a zoom where labels stay legible: a graph too big for that
      // shows its start (top left) and the minimap and scrolling give the rest.
      const viewport = readableViewport(fit, bounds, { left: 24, top, bottom: 24 }, { width, height });
      root.dataset.zoom = viewport.zoom.toFixed(3);
      lastFit.current = viewport;
      flow.setViewport(viewport, duration ? { duration } : undefined);
    },
    [flow, root, wrapper],
  );

  useEffect(() => {
    // A big graph fits to the sizes estimated for it (graph.js buildNodes), before anything is drawn: only the
    // nodes in view are drawn, where the fit puts the view.
    if (!fitted && nodes.length && nodes.every((node) => node.measured || node.handles)) {
      fitGraph();
      store.getState().markFitted();
    }
  }, [fitted, nodes, fitGraph, store]);
  // Tests (and anything measuring the drawing) wait for the first fit.
  useEffect(() => {
    if (fitted) root.dataset.fitted = "true";
  }, [fitted, root]);

  return { fitGraph, framesRef, lastFit };
}

// A side panel folding or opening moves the canvas's edges (panels.js). A view the last fit chose is fitted again
// to the new room; a view the person set keeps the drawing where it was on screen, so nothing under their eyes
// jumps by the panel's width when the canvas's left edge moves.
export function usePanelRoom({ flow, wrapper, fitGraph, lastFit, root }) {
  useEffect(() => {
    const paneBox = () => (wrapper.current?.querySelector(".react-flow") || wrapper.current)?.getBoundingClientRect();
    const onToggle = () => {
      const before = paneBox();
      if (!before) return;
      const view = flow.getViewport();
      const fit = lastFit.current;
      const untouched = fit && Math.abs(fit.x - view.x) < 1 && Math.abs(fit.y - view.y) < 1 && fit.zoom === view.zoom;
      // The canvas's width once the drawing has followed (tests wait for it); "changing" until then.
      root.dataset.room = "changing";
      // The event comes before the page changes; the next frame is laid out with the panel's new width. The shift
      // applies to the viewport as it is then: both panels folded in one frame shift it once, by the palette.
      window.requestAnimationFrame(() => {
        const after = paneBox();
        if (untouched) fitGraph();
        else if (after) {
          const now = flow.getViewport();
          flow.setViewport({ ...now, x: now.x + before.left - after.left, y: now.y + before.top - after.top });
        }
        root.dataset.room = String(Math.round(after ? after.width : 0));
      });
    };
    document.addEventListener(EVENTS.panelToggle, onToggle);
    return () => document.removeEventListener(EVENTS.panelToggle, onToggle);
  }, [flow, wrapper, fitGraph, lastFit, root]);
}

// The drawing's own area (the toolbar is a row above it) and where a fit starts it: below the minimap (top
// right), so at first the minimap covers no node.
function drawingArea(wrapper) {
  const pane = wrapper.querySelector(".react-flow") || wrapper;
  const area = pane.getBoundingClientRect();
  const minimap = pane.querySelector(".wf-minimap");
  const top = minimap ? Math.max(24, Math.round(minimap.getBoundingClientRect().bottom - area.top + 16)) : 24;
  return { width: area.width, height: area.height, top };
}

// What a fit shows of the graph at READABLE_ZOOM, in flow px: the shape autoLayout lays a graph out to fit.
function readableView(wrapper) {
  if (!wrapper) return DEFAULT_VIEW;
  const { width, height, top } = drawingArea(wrapper);
  const view = { width: (width - 48) / READABLE_ZOOM, height: (height - top - 24) / READABLE_ZOOM };
  return view.width > 100 && view.height > 100 ? view : DEFAULT_VIEW;
}

// A run drawn on the graph: the runs to choose from and the chosen one's overlay.
export function useRunOverlay(root) {
  const [runs, setRuns] = useState([]);
  const [runOverlay, setRunOverlay] = useState(null);

  const loadRuns = useCallback(async () => {
    const { status: code, data } = await request("GET", root.dataset.runsUrl);
    if (code === 200) setRuns(data.runs);
  }, [root]);
  useEffect(() => {
    loadRuns();
  }, [loadRuns]);

  const showRun = useCallback(
    async (runId) => {
      if (!runId) {
        setRunOverlay(null);
        root.dataset.run = "";
        closeRunNode();
        return;
      }
      const { status: code, data } = await request("GET", `${root.dataset.overlayUrl}?run=${encodeURIComponent(runId)}`);
      if (code !== 200) {
        notice((data && data.message) || `Could not load run #${runId} (HTTP ${code}).`, "error");
        return;
      }
      setRunOverlay(data);
      root.dataset.run = String(data.run.id);
    },
    [root],
  );

  const onNodeClick = useCallback(
    (_event, node) => {
      if (runOverlay) openRunNode(root.dataset.runNodeUrl, runOverlay.run.id, node.id);
    },
    [root, runOverlay],
  );

  return { runs, runOverlay, loadRuns, showRun, onNodeClick };
}

// The drawer beside the canvas that shows one node in the chosen run (htmx renders it).
function openRunNode(url, runId, nodeId) {
  const drawer = document.getElementById("run-node");
  if (!drawer || !window.htmx) return;
  const params = new URLSearchParams({ run: String(runId), node: nodeId });
  window.htmx.ajax("GET", `${url}?${params}`, { target: "#run-node", swap: "innerHTML" }).then(() => {
    drawer.classList.add("open");
  });
}

function closeRunNode() {
  const drawer = document.getElementById("run-node");
  if (drawer) drawer.classList.remove("open");
}

// Events from the htmx panels: a changed document (reload it), an edit to
// send (one-click fixes), a node to show, a palette item to add by keyboard.
export function usePanelEvents({ store, canEdit, flow, wrapper, addTemplate, selectOnly }) {
  useEffect(() => {
    const onChanged = (event) => {
      // The panel that changed the document already shows this node (it may
      // have a new id after a rename); keep it selected without re-announcing.
      const { node: nodeId, undo } = event.detail || {};
      store.getState().panelChanged({ nodeId, undo });
    };
    // A one-click fix (diagnostics panel) is an edit like any other.
    const onOps = (event) => {
      const { ops, selectField = null } = event.detail || {};
      if (ops && ops.length) store.getState().send(ops, { selectField });
    };
    const onFocus = (event) => {
      const { nodeId, field } = event.detail || {};
      if (!nodeId) return;
      store.getState().selectionChanged(nodeId);
      selectOnly(nodeId);
      showNode(flow, wrapper.current, nodeId);
      emit(EVENTS.select, { nodeId, field });
    };
    const onAdd = (event) => {
      if (!canEdit || !store.getState().doc) return;
      const template = event.detail.template;
      const beside = besideSelected(flow, wrapper.current, template);
      if (beside) {
        showSpot(flow, wrapper.current, beside);
        addTemplate(template, beside, null, { exact: true });
        return;
      }
      const box = wrapper.current.getBoundingClientRect();
      const centre = flow.screenToFlowPosition({ x: box.left + box.width / 2, y: box.top + box.height / 2 });
      addTemplate(template, { x: centre.x - NODE_WIDTH / 2, y: centre.y - 40 });
    };
    document.addEventListener(EVENTS.applyOps, onOps);
    document.addEventListener(EVENTS.documentChanged, onChanged);
    document.addEventListener(EVENTS.focus, onFocus);
    document.addEventListener(EVENTS.addNode, onAdd);
    return () => {
      document.removeEventListener(EVENTS.applyOps, onOps);
      document.removeEventListener(EVENTS.documentChanged, onChanged);
      document.removeEventListener(EVENTS.focus, onFocus);
      document.removeEventListener(EVENTS.addNode, onAdd);
    };
  }, [addTemplate, canEdit, flow, selectOnly, store, wrapper]);
}

// Brings one node into view, as React Flow's fitView on it would; fitView waits until every node is measured,
// which a big graph drawn only where it is in view never is (graph.js drawsVisibleOnly).
function showNode(flow, wrapper, nodeId) {
  const node = flow.getInternalNode(nodeId);
  if (!node || !wrapper) return;
  const pane = (wrapper.querySelector(".react-flow") || wrapper).getBoundingClientRect();
  const { x, y } = node.internals.positionAbsolute;
  const width = (node.measured && node.measured.width) || node.initialWidth || NODE_WIDTH;
  const height = (node.measured && node.measured.height) || node.initialHeight || estimatedHeight(1);
  const viewport = getViewportForBounds({ x, y, width, height }, pane.width, pane.height, 0.05, 1.1, 0.6);
  flow.setViewport(viewport, { duration: 250 });
}

// Where a palette item added with no drop point goes when one node is selected: beside that node's free
// output (layout.js besideOutput), clear of every node and of every drawn route. Null with no single selection.
function besideSelected(flow, wrapper, template) {
  const picked = flow.getNodes().filter((node) => node.selected);
  if (picked.length !== 1) return null;
  const anchor = flow.getInternalNode(picked[0].id);
  if (!anchor) return null;
  const at = anchor.internals.positionAbsolute;
  const measured = anchor.measured || {};
  const width = measured.width || NODE_WIDTH;
  const height = measured.height || 110;
  const routes = flow.getEdges().map((edge) => edge.data && edge.data.route).filter(Boolean);
  const used = new Set(routes.filter((route) => route.source === anchor.id).map((route) => route.label));
  const handles = ((anchor.internals.handleBounds || {}).source || []).filter((h) => h.id !== "in");
  const free = handles.find((handle) => !used.has(handle.id)) || handles[handles.length - 1];
  const handleY = free ? at.y + free.y + free.height / 2 : at.y + height / 2;
  const boxes = flow.getNodes().map((node) => {
    const inner = flow.getInternalNode(node.id);
    const position = inner ? inner.internals.positionAbsolute : node.position;
    return { x: position.x, y: position.y, width: (node.measured && node.measured.width) || NODE_WIDTH,
             height: (node.measured && node.measured.height) || 110 };
  });
  // A task's labels are known only once it is stored; room for three is enough for most.
  const labels = Array.isArray(template.node.labels) ? template.node.labels.length : 3;
  return besideOutput({
    anchor: { x: at.x, y: at.y, width, height },
    handleY,
    boxes,
    routes: drawnRoutes(wrapper),
    size: { width: NODE_WIDTH, height: estimatedHeight(labels) },
  });
}

// Pans (at the same zoom) so that a node about to be added at `spot` is in view and clear of the minimap,
// when it would not be: the person sees where it went.
function showSpot(flow, wrapper, spot) {
  const pane = (wrapper.querySelector(".react-flow") || wrapper).getBoundingClientRect();
  const minimap = wrapper.querySelector(".wf-minimap");
  const top = minimap ? minimap.getBoundingClientRect().bottom : pane.top;
  const from = flow.screenToFlowPosition({ x: pane.left, y: top });
  const to = flow.screenToFlowPosition({ x: pane.right, y: pane.bottom });
  const height = estimatedHeight(3);
  if (spot.x >= from.x && spot.y >= from.y && spot.x + NODE_WIDTH <= to.x && spot.y + height <= to.y) return;
  const { zoom } = flow.getViewport();
  flow.setCenter(spot.x + NODE_WIDTH / 2, spot.y + height / 2 - (top - pane.top) / (2 * zoom), { zoom });
}

// The drawn routes as polylines in flow coordinates: the SVG paths sit inside the viewport's transform,
// so their own coordinates are the flow's. Sampled every 8 px.
function drawnRoutes(wrapper) {
  return [...wrapper.querySelectorAll(".react-flow__edge path.react-flow__edge-path")].map((path) => {
    const total = path.getTotalLength();
    const points = [];
    for (let at = 0; at <= total; at += 8) {
      const point = path.getPointAtLength(at);
      points.push({ x: point.x, y: point.y });
    }
    return points;
  });
}

// Keyboard shortcuts (Delete is React Flow's own deleteKeyCode).
export function useShortcuts({ canEdit, undo, redo, fit }) {
  useEffect(() => {
    const onKey = (event) => {
      if (isTyping(event.target)) return;
      const mod = event.ctrlKey || event.metaKey;
      const key = event.key.toLowerCase();
      if (mod && key === "z" && canEdit) {
        event.preventDefault();
        if (event.shiftKey) redo();
        else undo();
      } else if (mod && key === "y" && canEdit) {
        event.preventDefault();
        redo();
      } else if (!mod && !event.altKey && key === "f") {
        event.preventDefault();
        fit();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [canEdit, fit, redo, undo]);
}

const DRAG_TYPE = "application/x-trellis-node";

// What a person does on the canvas, each turned into one edit: delete,
// connect, re-target or cut a route, drop a palette item, lay the graph out.
export function useEditActions({ store, canEdit, flow, framesRef, nodes, analysis, fitGraph, wrapper }) {
  const send = useCallback((ops, options) => store.getState().send(ops, options), [store]);

  const onDelete = useCallback(
    ({ nodes: gone, edges: cut }) => {
      const ids = new Set(gone.map((node) => node.id));
      // Routes of deleted nodes go with them; only the other cut routes are named.
      const routes = cut.map((edge) => edge.data.route).filter((r) => !ids.has(r.source) && !ids.has(r.target));
      const ops = routeOps(routes);
      if (ids.size) ops.push({ op: "remove_nodes", ids: [...ids] });
      send(ops);
    },
    [send],
  );

  const onConnect = useCallback(
    ({ source, sourceHandle, target }) => {
      if (!sourceHandle) return;
      send([{ op: "connect", source, label: sourceHandle, target }]);
    },
    [send],
  );

  // Dragging an edge's end onto another node re-targets it; dropping it on
  // the empty pane disconnects the route.
  const reconnected = useRef(false);
  const onReconnectStart = useCallback(() => {
    reconnected.current = false;
  }, []);
  const onReconnect = useCallback(
    (edge, connection) => {
      reconnected.current = true;
      const ops = routeOps([edge.data.route]);
      ops.push({ op: "connect", source: connection.source, label: connection.sourceHandle, target: connection.target });
      send(ops);
    },
    [send],
  );
  const onReconnectEnd = useCallback(
    (_event, edge) => {
      if (!reconnected.current) send(routeOps([edge.data.route]));
      reconnected.current = false;
    },
    [send],
  );

  const onSelectionChange = useCallback(
    ({ nodes: picked }) => {
      const nodeId = picked.length === 1 ? picked[0].id : null;
      if (store.getState().selectionChanged(nodeId)) emit(EVENTS.select, { nodeId, count: picked.length });
    },
    [store],
  );

  const addTemplate = useCallback(
    (template, position, into = null, { exact = false } = {}) => {
      // Boxes of the drawn nodes, to keep a new node clear of them.
      const boxes = flow.getNodes().map((node) => ({
        x: node.position.x,
        y: node.position.y,
        width: (node.measured && node.measured.width) || NODE_WIDTH,
        height: (node.measured && node.measured.height) || 110,
      }));
      // An exact position was already chosen clear of nodes and routes (besideSelected).
      const spot = exact ? position : dropSpot(boxes, position);
      // A new loop or branch needs its path first: open the inspector on that field's picker.
      const field = { foreach: "over", branch: "path" }[template.node.kind] || null;
      const op = { op: "add_node", node: template.node, id_hint: template.id_hint, position: spot };
      if (into) Object.assign(op, into);
      send([op], { selectField: field });
    },
    [flow, send],
  );

  const onDragOver = useCallback(
    (event) => {
      if (!canEdit || !event.dataTransfer.types.includes(DRAG_TYPE)) return;
      event.preventDefault();
      event.dataTransfer.dropEffect = "copy";
    },
    [canEdit],
  );

  const onDrop = useCallback(
    (event) => {
      if (!canEdit) return;
      const raw = event.dataTransfer.getData(DRAG_TYPE);
      if (!raw) return;
      event.preventDefault();
      const point = flow.screenToFlowPosition({ x: event.clientX, y: event.clientY });
      addTemplate(
        JSON.parse(raw),
        { x: Math.round(point.x - NODE_WIDTH / 2), y: Math.round(point.y - 30) },
        loopAt(event, point, framesRef.current),
      );
    },
    [addTemplate, canEdit, flow, framesRef],
  );

  const layoutAll = useCallback(() => {
    const current = store.getState().doc;
    if (!current || !current.nodes.length) return;
    const labels = new Map(nodes.map((node) => [node.id, node.data.labels]));
    const positions = autoLayout(
      current.nodes.map((node) => ({ id: node.id, labels: labels.get(node.id) || [] })),
      current.routes,
      (analysis && analysis.control_regions) || {},
      readableView(wrapper.current),
    );
    send([{ op: "move_nodes", positions }]).then(() => window.requestAnimationFrame(() => fitGraph(200)));
  }, [analysis, fitGraph, nodes, send, store, wrapper]);

  return {
    onDelete, onConnect, onReconnectStart, onReconnect, onReconnectEnd, onSelectionChange,
    addTemplate, onDragOver, onDrop, layoutAll,
  };
}

// Where a palette item dropped at ``point`` joins a loop: onto a foreach's
// "loop" handle puts it first in that body; inside a loop frame (the
// innermost one) puts it last, before the route back.
function loopAt(event, point, frames) {
  const under = document.elementFromPoint(event.clientX, event.clientY);
  const handle = under && under.closest && under.closest('.react-flow__handle[data-handleid="loop"]');
  if (handle) {
    const owner = handle.closest(".react-flow__node");
    if (owner) return { loop: /** @type {HTMLElement} */ (owner).dataset.id, at: "start" };
  }
  const inside = frames
    .filter((f) => point.x >= f.x && point.x <= f.x + f.width && point.y >= f.y && point.y <= f.y + f.height)
    .sort((a, b) => a.width * a.height - b.width * b.height);
  return inside.length ? { loop: inside[0].id, at: "end" } : null;
}
