// The workflow canvas. The server owns the document: every edit is a list of
// named operations sent through the tab's one edit queue (queue.js) to the
// editor's write endpoint, and the canvas redraws from the answer. The answer
// carries the operations that undo the edit; undo sends those, redo sends the
// undo's own undo. Panel edits arrive with their undo too, so Ctrl+Z covers both.
import {
  Background,
  Controls,
  MiniMap,
  Panel,
  ReactFlow,
  ReactFlowProvider,
  applyEdgeChanges,
  applyNodeChanges,
  getViewportForBounds,
  useReactFlow,
  useUpdateNodeInternals,
} from "@xyflow/react";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";

import { documentUrl, request, validateUrl } from "./api.js";
import { positionsOf, routeOps } from "./doc.js";
import { emit, EVENTS, notice } from "./events.js";
import { buildEdges, buildFrames, buildNodes, withChannels } from "./graph.js";
import { autoLayout, dropSpot, NODE_WIDTH, READABLE_ZOOM, readableViewport } from "./layout.js";
import { discardQueued, sendOps, setRevision } from "./queue.js";
import { edgeTypes } from "./edges.jsx";
import { Frames, Toolbar } from "./chrome.jsx";
import { nodeTypes } from "./nodes.jsx";

const HISTORY_LIMIT = 100;
const DRAG_TYPE = "application/x-trellis-node";

function isTyping(target) {
  if (!target || !(target instanceof Element)) return false;
  return Boolean(target.closest("input, textarea, select, [contenteditable=''], [contenteditable='true']"));
}

function Canvas({ workflowId, apiBase, canEdit, root }) {
  const flow = useReactFlow();
  const [doc, setDoc] = useState(null);
  const [analysis, setAnalysis] = useState(null);
  const [diagnostics, setDiagnostics] = useState([]);
  const [nodes, setNodes] = useState([]);
  const [edges, setEdges] = useState([]);
  const [status, setStatus] = useState({ state: "loading", revision: null });
  const [historySize, setHistorySize] = useState({ undo: 0, redo: 0 });
  // A run drawn on the graph: the runs to choose from and the chosen one's overlay.
  const [runs, setRuns] = useState([]);
  const [runOverlay, setRunOverlay] = useState(null);

  const docRef = useRef(null);
  const revisionRef = useRef(null);
  const history = useRef({ undo: [], redo: [] });
  const inFlight = useRef(0);
  const analysisTicket = useRef(0);
  const pendingSelect = useRef(null);
  const lastSelected = useRef(null);
  const fitted = useRef(false);
  const wrapper = useRef(null);

  const docUrl = documentUrl(apiBase, workflowId);

  const syncHistorySize = () =>
    setHistorySize({ undo: history.current.undo.length, redo: history.current.redo.length });

  const publishRevision = useCallback(
    (revision, state = "saved") => {
      revisionRef.current = revision;
      setRevision(revision);
      setStatus({ state, revision });
      root.dataset.revision = String(revision);
      root.dataset.state = state;
      const field = document.getElementById("editor-revision");
      if (field) field.value = String(revision);
    },
    [root],
  );

  // Regions, reachability and labels for every node in one call.
  const refreshAnalysis = useCallback(async () => {
    const ticket = ++analysisTicket.current;
    const { status: code, data } = await request("POST", validateUrl(apiBase, workflowId), {});
    if (ticket !== analysisTicket.current || code !== 200) return;
    setAnalysis(data);
    if (data.diagnostics) setDiagnostics(data.diagnostics);
  }, [apiBase, workflowId]);

  const adopt = useCallback(
    (data, { revision = data.revision, diagnostics: diags = data.diagnostics, state = "saved" } = {}) => {
      docRef.current = data.document;
      setDoc(data.document);
      if (diags) setDiagnostics(diags);
      publishRevision(revision, state);
      if (data.analysis) {
        analysisTicket.current += 1;
        setAnalysis(data.analysis);
      } else {
        refreshAnalysis();
      }
    },
    [publishRevision, refreshAnalysis],
  );

  const load = useCallback(
    async () => {
      const { status: code, data } = await request("GET", docUrl);
      if (code !== 200) {
        notice(data && data.message ? data.message : `Could not load the workflow (HTTP ${code}).`, "error");
        return null;
      }
      // Fit once, to the graph as loaded; an empty canvas keeps its viewport so
      // nodes land where they are dropped.
      if (!data.document.nodes.length) {
        fitted.current = true;
        root.dataset.fitted = "true";
      }
      adopt(data);
      return data;
    },
    [adopt, docUrl, root],
  );

  useEffect(() => {
    load();
  }, [load]);

  // Sends one edit (a list of operations) through the tab's queue. ``record``
  // says which history stack takes the answer's undo: "undo" for a new edit
  // (clearing redo), "redo" when undoing, "undo-keep" when redoing.
  const send = useCallback(
    async (ops, { record = "undo", selectField = null } = {}) => {
      if (!canEdit || !ops.length) return null;
      inFlight.current += 1;
      publishRevision(revisionRef.current, "saving");
      let answer;
      try {
        answer = await sendOps(ops);
      } catch {
        inFlight.current -= 1;
        discardQueued();
        notice("The server could not be reached; the change was not saved.", "error");
        publishRevision(revisionRef.current, "error");
        return null;
      }
      inFlight.current -= 1;
      const settled = inFlight.current === 0 ? "saved" : "saving";
      if (answer.skipped) {
        publishRevision(revisionRef.current, settled);
        return null;
      }
      const { status: code, data } = answer;
      if (code === 200) {
        const stacks = history.current;
        if (data.undo && data.undo.length) {
          if (record === "undo") {
            stacks.undo.push(data.undo);
            if (stacks.undo.length > HISTORY_LIMIT) stacks.undo.shift();
            stacks.redo = [];
          } else if (record === "redo") stacks.redo.push(data.undo);
          else if (record === "undo-keep") stacks.undo.push(data.undo);
          syncHistorySize();
        }
        if (data.select) {
          // Shown selected at once; the inspector is asked for it now that the node is stored.
          pendingSelect.current = data.select;
          lastSelected.current = data.select;
        }
        adopt(data, { state: settled });
        if (data.select) emit(EVENTS.select, { nodeId: data.select, field: selectField });
        emit(EVENTS.documentSaved, { revision: data.revision });
        return data;
      }
      if (code === 409) {
        history.current = { undo: [], redo: [] };
        syncHistorySize();
        adopt({ document: data.document, revision: data.current_revision, diagnostics: null });
        notice(
          `Someone else saved this workflow (now revision ${data.current_revision}). ` +
            "The canvas shows their version; your last change was not applied.",
          "conflict",
        );
        emit(EVENTS.documentReloaded, { revision: data.current_revision });
        return null;
      }
      if (code === 403) notice("You can view this workflow but not change it.", "error");
      else notice((data && data.message) || `The change could not be saved (HTTP ${code}).`, "error");
      await load();
      emit(EVENTS.documentReloaded, { revision: revisionRef.current });
      return null;
    },
    [adopt, canEdit, load, publishRevision],
  );

  const undo = useCallback(() => {
    const past = history.current.undo;
    if (!past.length) return;
    const ops = past.pop();
    syncHistorySize();
    send(ops, { record: "redo" });
  }, [send]);

  const redo = useCallback(() => {
    const future = history.current.redo;
    if (!future.length) return;
    const ops = future.pop();
    syncHistorySize();
    send(ops, { record: "undo-keep" });
  }, [send]);

  // Redraw whenever the document or what the server says about it changes.
  useEffect(() => {
    if (!doc || !analysis) return;
    const selectId = pendingSelect.current && doc.nodes.some((n) => n.id === pendingSelect.current)
      ? pendingSelect.current
      : null;
    if (selectId) pendingSelect.current = null;
    setNodes((previous) => buildNodes(doc, analysis, diagnostics, previous, { canEdit, selectId, runOverlay }));
    setEdges((previous) => buildEdges(doc, analysis, previous));
  }, [doc, analysis, diagnostics, canEdit, runOverlay]);

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

  // React Flow measures handles when a node's size changes. Renaming a label
  // (a branch case, an interrupt answer) keeps the size, so without this the
  // renamed handle cannot start a connection.
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

  const frames = useMemo(() => (doc && analysis ? buildFrames(doc, analysis, nodes) : []), [doc, analysis, nodes]);
  const framesRef = useRef(frames);
  framesRef.current = frames;

  // Fit the whole drawing: nodes, the loop frames around them and the
  // back-edges under the frames, clear of the toolbar (top left) and the
  // zoom controls and minimap (bottom corners).
  const fitGraph = useCallback(
    (duration = 0) => {
      const drawn = flow.getNodes();
      if (!drawn.length || !wrapper.current) return;
      const box = flow.getNodesBounds(drawn);
      let [x1, y1, x2, y2] = [box.x, box.y, box.x + box.width, box.y + box.height];
      for (const frame of framesRef.current) {
        x1 = Math.min(x1, frame.x);
        y1 = Math.min(y1, frame.y);
        x2 = Math.max(x2, frame.x + frame.width);
        y2 = Math.max(y2, frame.y + frame.height + 30);
      }
      const area = wrapper.current.getBoundingClientRect();
      const { width, height } = area;
      // Clear of the toolbar, however many rows a narrow canvas wraps it into.
      const toolbar = wrapper.current.querySelector(".wf-toolbar");
      const top = toolbar ? Math.max(64, Math.round(toolbar.getBoundingClientRect().bottom - area.top + 16)) : 64;
      const bounds = { x: x1, y: y1, width: x2 - x1, height: y2 - y1 };
      const fitted = getViewportForBounds(bounds, width, height, 0.05, 1.1, { top: `${top}px`, bottom: "48px", x: "5%" });
      // Never below a zoom where labels stay legible: a graph too big for that
      // shows its start (top left) and the minimap and scrolling give the rest.
      const viewport = readableViewport(fitted, bounds, { left: 24, top });
      root.dataset.zoom = viewport.zoom.toFixed(3);
      flow.setViewport(viewport, duration ? { duration } : undefined);
    },
    [flow, root],
  );

  useEffect(() => {
    if (!fitted.current && nodes.length && nodes.every((node) => node.measured)) {
      fitted.current = true;
      fitGraph();
      // Tests (and anything measuring the drawing) wait for the first fit.
      root.dataset.fitted = "true";
    }
  }, [nodes, fitGraph, root]);
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

  // --- React Flow callbacks ---------------------------------------------------

  // A move is stored when it settles: at the end of a mouse drag at once, and
  // after a short pause for arrow-key moves, so holding a key is one save.
  const dragging = useRef(false);
  const pendingMoves = useRef({});
  const moveTimer = useRef(null);
  const onNodesChange = useCallback(
    (changes) => {
      const kept = changes.filter((c) => c.type !== "remove");
      setNodes((current) => applyNodeChanges(kept, current));
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
        const stored = positionsOf(docRef.current || {});
        for (const node of flow.getNodes()) {
          if (!stored[node.id] && !moved[node.id]) {
            moved[node.id] = { x: Math.round(node.position.x), y: Math.round(node.position.y) };
          }
        }
        // Only the places that changed travel: a drag is one small operation.
        if (Object.keys(moved).length) send([{ op: "move_nodes", positions: moved }]);
      };
      window.clearTimeout(moveTimer.current);
      if (dragging.current) {
        dragging.current = false;
        flush();
      } else {
        moveTimer.current = window.setTimeout(flush, 400);
      }
    },
    [canEdit, flow, send],
  );
  const onEdgesChange = useCallback(
    (changes) => setEdges((current) => applyEdgeChanges(changes.filter((c) => c.type !== "remove"), current)),
    [],
  );

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

  const onSelectionChange = useCallback(({ nodes: picked }) => {
    const nodeId = picked.length === 1 ? picked[0].id : null;
    if (nodeId === lastSelected.current) return;
    lastSelected.current = nodeId;
    emit(EVENTS.select, { nodeId, count: picked.length });
  }, []);

  // Boxes of the drawn nodes, to keep a new node clear of them.
  const nodeBoxes = useCallback(
    () =>
      flow.getNodes().map((node) => ({
        x: node.position.x,
        y: node.position.y,
        width: (node.measured && node.measured.width) || NODE_WIDTH,
        height: (node.measured && node.measured.height) || 110,
      })),
    [flow],
  );

  const addTemplate = useCallback(
    (template, position, into = null) => {
      const spot = dropSpot(nodeBoxes(), position);
      // A new loop or branch needs its path first: open the inspector on that field's picker.
      const field = { foreach: "over", branch: "path" }[template.node.kind] || null;
      const op = { op: "add_node", node: template.node, id_hint: template.id_hint, position: spot };
      if (into) Object.assign(op, into);
      send([op], { selectField: field });
    },
    [nodeBoxes, send],
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
    [addTemplate, canEdit, flow],
  );

  const layoutAll = useCallback(() => {
    const current = docRef.current;
    if (!current || !current.nodes.length) return;
    const labels = new Map(nodes.map((node) => [node.id, node.data.labels]));
    const positions = autoLayout(
      current.nodes.map((node) => ({ id: node.id, labels: labels.get(node.id) || [] })),
      current.routes,
      (analysis && analysis.control_regions) || {},
    );
    send([{ op: "move_nodes", positions }]).then(() => window.requestAnimationFrame(() => fitGraph(200)));
  }, [analysis, fitGraph, nodes, send]);

  const fit = useCallback(() => fitGraph(200), [fitGraph]);

  // --- events from the htmx panels --------------------------------------------

  useEffect(() => {
    const onChanged = (event) => {
      // The panel that changed the document already shows this node (it may
      // have a new id after a rename); keep it selected without re-announcing.
      const { node: nodeId, undo: undoOps } = event.detail || {};
      if (nodeId) {
        pendingSelect.current = nodeId;
        lastSelected.current = nodeId;
      }
      if (undoOps && undoOps.length) {
        history.current.undo.push(undoOps);
        history.current.redo = [];
        syncHistorySize();
      }
      load();
    };
    // A one-click fix (diagnostics panel) is an edit like any other.
    const onOps = (event) => {
      const { ops, selectField = null } = event.detail || {};
      if (ops && ops.length) send(ops, { selectField });
    };
    const onFocus = (event) => {
      const { nodeId, field } = event.detail || {};
      if (!nodeId) return;
      lastSelected.current = nodeId;
      setNodes((current) => current.map((node) => ({ ...node, selected: node.id === nodeId })));
      setEdges((current) => current.map((edge) => ({ ...edge, selected: false })));
      const target = flow.getNode(nodeId);
      if (target) flow.fitView({ nodes: [{ id: nodeId }], maxZoom: 1.1, duration: 250, padding: 0.6 });
      emit(EVENTS.select, { nodeId, field });
    };
    const onAdd = (event) => {
      if (!canEdit || !docRef.current) return;
      const box = wrapper.current.getBoundingClientRect();
      const centre = flow.screenToFlowPosition({ x: box.left + box.width / 2, y: box.top + box.height / 2 });
      addTemplate(event.detail.template, { x: centre.x - NODE_WIDTH / 2, y: centre.y - 40 });
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
  }, [addTemplate, canEdit, flow, load, send]);

  // Keyboard shortcuts (Delete is React Flow's own deleteKeyCode).
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

  const empty = doc && doc.nodes.length === 0;

  return (
    <div className="wf-canvas" ref={wrapper} onDragOver={onDragOver} onDrop={onDrop}>
      <ReactFlow
        nodes={nodes}
        edges={drawnEdges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        onDelete={onDelete}
        onConnect={onConnect}
        onReconnect={onReconnect}
        onReconnectStart={onReconnectStart}
        onReconnectEnd={onReconnectEnd}
        onSelectionChange={onSelectionChange}
        onNodeClick={onNodeClick}
        nodesDraggable={canEdit}
        nodesConnectable={canEdit}
        edgesReconnectable={canEdit}
        deleteKeyCode={canEdit ? ["Delete", "Backspace"] : null}
        multiSelectionKeyCode={["Meta", "Control"]}
        selectionKeyCode="Shift"
        minZoom={READABLE_ZOOM}
        maxZoom={2}
        proOptions={{ hideAttribution: true }}
        aria-label="Workflow canvas"
      >
        <Frames frames={frames} loops={runOverlay ? runOverlay.loops : null} />
        <Background gap={20} size={1.2} color="#d3d8e0" />
        <MiniMap
          pannable
          zoomable
          className="wf-minimap"
          style={{ width: 168, height: 112 }}
          nodeStrokeWidth={3}
          nodeColor={minimapColor}
          ariaLabel="Overview of the whole graph"
        />
        <Controls showInteractive={false} position="bottom-left" />
        <Toolbar
          canEdit={canEdit}
          status={status}
          historySize={historySize}
          onUndo={undo}
          onRedo={redo}
          onFit={fit}
          onLayout={layoutAll}
          runs={runs}
          run={runOverlay}
          onRunsOpen={loadRuns}
          onRun={showRun}
        />
        {empty && (
          <Panel position="top-center" className="wf-empty">
            {canEdit
              ? "Drag a task or a control node from the palette to start."
              : "This workflow has no nodes yet."}
          </Panel>
        )}
      </ReactFlow>
    </div>
  );
}

// Where a palette item dropped at ``point`` joins a loop: onto a foreach's
// "loop" handle puts it first in that body; inside a loop frame (the
// innermost one) puts it last, before the route back.
function loopAt(event, point, frames) {
  const under = document.elementFromPoint(event.clientX, event.clientY);
  const handle = under && under.closest && under.closest('.react-flow__handle[data-handleid="loop"]');
  if (handle) {
    const owner = handle.closest(".react-flow__node");
    if (owner) return { loop: owner.dataset.id, at: "start" };
  }
  const inside = frames
    .filter((f) => point.x >= f.x && point.x <= f.x + f.width && point.y >= f.y && point.y <= f.y + f.height)
    .sort((a, b) => a.width * a.height - b.width * b.height);
  return inside.length ? { loop: inside[0].id, at: "end" } : null;
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

function minimapColor(node) {
  if (node.data && node.data.errors) return "#e57373";
  return (node.data && node.data.regionColor) || "#9aa5b8";
}

export function Editor(props) {
  return (
    <ReactFlowProvider>
      <Canvas {...props} />
    </ReactFlowProvider>
  );
}
