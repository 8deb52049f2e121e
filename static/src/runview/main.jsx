// The run page's canvas: the run's own version drawn read-only in the editor's look, each node in its state
// (in words and colour), each loop with done / failed / running / total, each subgraph call openable as its
// child scope (a breadcrumb leads back). A click on a node opens its executions in the side panel (an htmx
// partial). While the run goes, every poll of the live page (#run-poll) brings the states anew.
// Everything it shows comes from /runs/<id>/graph/ (designer/runs/graph_views.py); this file only draws it.
import "@xyflow/react/dist/style.css";
import {
  Controls,
  getViewportForBounds,
  // @ts-ignore -- @xyflow/react exports Handle as a component and as a type; a JS file sees only the type
  Handle,
  Position,
  ReactFlowProvider,
  useNodesInitialized,
  useNodesState,
  useReactFlow,
} from "@xyflow/react";
import { memo, StrictMode, useCallback, useEffect, useMemo, useRef, useState } from "react";
import { createRoot } from "react-dom/client";

import { request } from "../editor/api.js";
import { GraphCanvas } from "../editor/chrome.jsx";
import { buildEdges, buildFrames, buildNodes, withChannels } from "../editor/graph.js";
import { READABLE_ZOOM, readableViewport } from "../editor/layout.js";
import { NodeHead, NodeLabels, regionStyle } from "../editor/nodes.jsx";
import { revealViewport } from "./reveal.js";
import { countsText, executionsUrl, firstCall, stateClass } from "./states.js";

const READ_ONLY_HANDLE = { isConnectable: false };

function RunNode({ id, data }) {
  const state = data.state;
  const counts = countsText(data.kind, data.entry, data.loop);
  return (
    <div
      className={`wf-node wf-node--${data.kind} run-node is-${stateClass(state)}${data.open ? " is-selected" : ""}`}
      style={regionStyle(data)}
      data-testid="run-node"
      data-node={id}
      data-state={state}
    >
      <Handle type="target" position={Position.Left} id="in" className="wf-handle wf-handle--in" isConnectable={false} />
      <NodeHead data={data} />
      {/* The node's own button: its name is its label, what it opens is its executions. */}
      <button
        type="button"
        className="run-node__open nodrag"
        aria-describedby={`run-state-${id}`}
        aria-expanded={data.open ? "true" : "false"}
        aria-controls="run-node-side"
        onClick={() => data.onOpen(id)}
      >
        {data.title}
      </button>
      <div className="run-node__state" id={`run-state-${id}`}>
        <span className={`run-state is-${stateClass(state)}`} data-testid="run-state">
          {state}
        </span>
        {counts && (
          <span className="run-node__counts" data-testid="run-counts">
            {counts}
          </span>
        )}
      </div>
      {data.subtitle && (
        <div className="wf-node__sub" title={data.subtitle}>
          {data.subtitle}
        </div>
      )}
      {data.calls && data.calls.length > 0 && (
        <button type="button" className="run-node__scope nodrag" onClick={() => data.onScope(id)}>
          Open {data.childName} ({data.calls.length} call{data.calls.length === 1 ? "" : "s"})
        </button>
      )}
      <NodeLabels data={data} handle={() => READ_ONLY_HANDLE} showUnknown={false} hidden />
    </div>
  );
}

const nodeTypes = { run: memo(RunNode) };

async function fetchGraph(url, key, statesOnly) {
  const params = new URLSearchParams();
  if (key) params.set("scope", key);
  if (statesOnly) params.set("states", "1");
  const query = params.toString();
  return request("GET", query ? `${url}?${query}` : url);
}

function ScopeBar({ graph, switcher, onScope, onCall }) {
  const crumbs = graph.crumbs;
  return (
    <div className="run-graph__bar">
      <nav className="run-graph__crumbs" aria-label="Scope">
        <ol>
          {crumbs.map((crumb, index) =>
            index < crumbs.length - 1 ? (
              <li key={crumb.key || "root"}>
                <button type="button" className="link" onClick={() => onScope(crumb.key)}>
                  {crumb.title}
                </button>
              </li>
            ) : (
              <li key={crumb.key || "root"} aria-current="location" data-testid="scope-current">
                {crumb.title}
              </li>
            ),
          )}
        </ol>
      </nav>
      {switcher && switcher.calls.length > 1 && (
        <span className="run-graph__calls">
          <label htmlFor="run-call-choice">Call</label>
          <select id="run-call-choice" value={graph.scope.key} onChange={(event) => onCall(event.target.value)}>
            {switcher.calls.map((call) => (
              <option key={call.key} value={call.key}>
                {call.item} · {call.state}
              </option>
            ))}
          </select>
        </span>
      )}
    </div>
  );
}

function Canvas({ root }) {
  const flow = useReactFlow();
  const wrapper = useRef(null);
  const [graph, setGraph] = useState(null);
  const [problem, setProblem] = useState("");
  const [switcher, setSwitcher] = useState(null);
  const [openNode, setOpenNode] = useState(null);
  const [nodes, setNodes, onNodesChange] = useNodesState([]);
  const initialized = useNodesInitialized();
  const fittedFor = useRef(null);
  const url = root.dataset.graphUrl;

  const load = useCallback(
    async (key) => {
      const { status, data } = await fetchGraph(url, key, false);
      if (status !== 200) {
        setProblem((data && data.message) || `Could not load the run's graph (HTTP ${status}).`);
        return;
      }
      setProblem("");
      setGraph(data);
      root.dataset.scope = key;
    },
    [url, root],
  );

  useEffect(() => {
    load("");
  }, [load]);

  // Each poll of the live page (the incremental feed) brings the states of the scope shown. Heard before the
  // poll's answer replaces its element: afterwards the element is out of the page, and so are its events.
  // The states are read from the run's trace, so their cost grows with it (the poll's own does not): one
  // request at a time, and after one that took long, a pause of a few times as long before the next.
  useEffect(() => {
    if (root.dataset.live !== "true") return undefined;
    let busy = false;
    let notBefore = 0;
    const onPoll = async (event) => {
      const elt = event.detail && event.detail.elt;
      if (!elt || elt.id !== "run-poll" || event.detail.xhr.status !== 200) return;
      if (busy || performance.now() < notBefore) return;
      busy = true;
      const began = performance.now();
      const { status, data } = await fetchGraph(url, root.dataset.scope || "", true).finally(() => {
        busy = false;
      });
      notBefore = performance.now() + 4 * (performance.now() - began);
      if (status !== 200) return;
      setGraph((current) => (current && current.scope.key === data.scope.key ? { ...current, ...data } : current));
      root.dataset.polls = String(Number(root.dataset.polls || "0") + 1);
    };
    document.body.addEventListener("htmx:beforeSwap", onPoll);
    return () => document.body.removeEventListener("htmx:beforeSwap", onPoll);
  }, [url, root]);

  const openScope = useCallback(
    (key, calls) => {
      setSwitcher(calls ? { calls } : null);
      setOpenNode(null);
      closePanel();
      load(key);
    },
    [load],
  );

  const onOpen = useCallback(
    (nodeId) => {
      if (!graph) return;
      setOpenNode(nodeId);
      const node = graph.document.nodes.find((n) => n.id === nodeId);
      openPanel(executionsUrl(graph.executions_url, graph.node_slot, nodeId, graph.scope.key), nodeId,
                (node && node.name) || nodeId);
    },
    [graph],
  );

  // Anywhere on a node opens it, as its button does (React Flow also lets a node take the pointer only when
  // it has a click handler); the node's own buttons handle their clicks themselves.
  const onNodeClick = useCallback(
    (event, clicked) => {
      if (!event.target.closest("button")) onOpen(clicked.id);
    },
    [onOpen],
  );

  const onScope = useCallback(
    (nodeId) => {
      const calls = (graph && graph.calls[nodeId]) || [];
      const call = firstCall(calls);
      if (call) openScope(call.key, calls);
    },
    [graph, openScope],
  );

  const drawn = useMemo(() => {
    if (!graph || !graph.document) return null;
    const built = buildNodes(graph.document, graph.analysis, [], [], { canEdit: false, selectId: null, runOverlay: null });
    const byId = new Map(graph.document.nodes.map((node) => [node.id, node]));
    return built.map((node) => {
      const source = byId.get(node.id) || {};
      const entry = graph.nodes[node.id];
      return {
        ...node,
        type: "run",
        draggable: false,
        selectable: false,
        connectable: false,
        ariaLabel: undefined,
        data: {
          ...node.data,
          state: entry ? entry.state : "not reached",
          entry,
          loop: graph.loops[node.id],
          calls: graph.calls[node.id] || [],
          childName: source.workflow ? source.workflow.id : "",
          open: openNode === node.id,
          onOpen,
          onScope,
        },
      };
    });
  }, [graph, openNode, onOpen, onScope]);

  useEffect(() => {
    if (!drawn) return;
    setNodes((previous) => {
      const measured = new Map(previous.map((node) => [node.id, node.measured]));
      return drawn.map((node) => ({ ...node, measured: measured.get(node.id) }));
    });
  }, [drawn, setNodes]);

  const edges = useMemo(() => {
    if (!graph || !graph.document) return [];
    return withChannels(buildEdges(graph.document, graph.analysis, []), nodes).map((edge) => ({
      ...edge,
      selectable: false,
      focusable: false,
    }));
  }, [graph, nodes]);
  const frames = useMemo(
    () => (graph && graph.document ? buildFrames(graph.document, graph.analysis, nodes) : []),
    [graph, nodes],
  );

  // Fitted once per scope shown, never below a zoom where labels stay readable (then its start shows).
  useEffect(() => {
    if (!graph || !initialized || !wrapper.current || fittedFor.current === graph.scope.key) return;
    const shown = flow.getNodes();
    if (!shown.length) return;
    const box = flow.getNodesBounds(shown);
    let [x1, y1, x2, y2] = [box.x, box.y, box.x + box.width, box.y + box.height];
    for (const frame of frames) {
      x1 = Math.min(x1, frame.x, box.x - 32);
      y1 = Math.min(y1, frame.y);
      x2 = Math.max(x2, frame.x + frame.width);
      y2 = Math.max(y2, frame.y + frame.height + 30);
    }
    const bounds = { x: x1, y: y1, width: x2 - x1, height: y2 - y1 };
    const margin = { left: 24, top: 24, bottom: 24 };
    const place = (area) => {
      const fit = getViewportForBounds(bounds, area.width, area.height, 0.05, 1.1, { top: "24px", bottom: "24px", x: "4%" });
      return readableViewport(fit, bounds, margin, area);
    };
    // A flat graph gets a flat canvas (no empty band above and below it), so the timeline under it is in view.
    wrapper.current.style.height = "";
    const full = wrapper.current.getBoundingClientRect();
    const first = place(full);
    const height = Math.min(full.height, Math.max(260, Math.ceil(bounds.height * first.zoom) + 2 * 40));
    wrapper.current.style.height = `${height}px`;
    const viewport = place({ width: full.width, height });
    flow.setViewport(viewport);
    fittedFor.current = graph.scope.key;
    root.dataset.fitted = "true";
    root.dataset.zoom = viewport.zoom.toFixed(3);
  }, [graph, initialized, flow, frames, root]);

  useEffect(() => {
    if (graph) root.dataset.ready = "true";
  }, [graph, root]);

  // A node's button reached by the keyboard is brought into view: the canvas pans (never zooms) just enough, and
  // not at all when the node shows already. A pointer's press leaves the drawing where the person put it.
  const onCanvasFocus = useCallback(
    (event) => {
      const target = /** @type {HTMLElement} */ (event.target);
      const holder = /** @type {HTMLElement | null} */ (target.closest(".react-flow__node"));
      const pane = wrapper.current && wrapper.current.querySelector(".react-flow");
      if (!holder || !pane || !target.matches(":focus-visible")) return;
      const internal = flow.getInternalNode(holder.dataset.id || "");
      if (!internal) return;
      const box = {
        ...internal.internals.positionAbsolute,
        width: internal.measured.width || holder.offsetWidth,
        height: internal.measured.height || holder.offsetHeight,
      };
      const view = revealViewport(box, flow.getViewport(), { width: pane.clientWidth, height: pane.clientHeight });
      if (!view) return;
      const still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
      flow.setViewport(view, still ? undefined : { duration: 200 });
      root.dataset.reveals = String(Number(root.dataset.reveals || "0") + 1);
    },
    [flow, root],
  );

  return (
    <div className="run-graph__inner">
      {graph && (
        <ScopeBar
          graph={graph}
          switcher={switcher}
          onScope={(key) => openScope(key, null)}
          onCall={(key) => openScope(key, switcher && switcher.calls)}
        />
      )}
      {problem && (
        <p className="error" role="alert">
          {problem}
        </p>
      )}
      <div className="run-graph__canvas" ref={wrapper} onFocus={onCanvasFocus}>
        <GraphCanvas
          frames={frames}
          loops={graph ? graph.loops : null}
          nodes={nodes}
          edges={edges}
          nodeTypes={nodeTypes}
          onNodesChange={onNodesChange}
          onNodeClick={onNodeClick}
          nodesDraggable={false}
          nodesConnectable={false}
          elementsSelectable={false}
          edgesFocusable={false}
          nodesFocusable={false}
          minZoom={READABLE_ZOOM / 2}
          aria-label="Run graph"
        >
          <Controls showInteractive={false} position="bottom-left" />
        </GraphCanvas>
      </div>
    </div>
  );
}

// The side panel beside the canvas: a node's executions, rendered by the server into #run-node-panel.
function openPanel(url, nodeId, title) {
  const side = document.getElementById("run-node-side");
  const panel = document.getElementById("run-node-panel");
  if (!side || !panel) return;
  side.hidden = false;
  side.dataset.node = nodeId;
  side.closest(".run-graph")?.classList.add("has-panel");
  const heading = side.querySelector("[data-panel-title]");
  if (heading) heading.textContent = title;
  panel.textContent = "Loading…";
  panel.setAttribute("aria-busy", "true");
  if (!window.htmx) return;
  window.htmx
    .ajax("GET", url, { target: "#run-node-panel", swap: "innerHTML" })
    .catch(() => {})
    .finally(() => panel.removeAttribute("aria-busy"));
}

function closePanel() {
  const side = document.getElementById("run-node-side");
  if (!side) return;
  side.hidden = true;
  side.closest(".run-graph")?.classList.remove("has-panel");
}

// A panel htmx could not fill says so (htmx leaves the target as it was on an error answer).
document.body.addEventListener("htmx:responseError", (event) => {
  const target = event.detail && event.detail.target;
  if (!target || target.id !== "run-node-panel") return;
  target.textContent = `Could not load this node's executions (HTTP ${event.detail.xhr.status}).`;
  target.removeAttribute("aria-busy");
});

document.addEventListener("click", (event) => {
  const target = /** @type {Element} */ (event.target);
  if (target.closest && target.closest("[data-close-run-node]")) closePanel();
});

// Mounted on every [data-run-canvas] not mounted yet: at load, and when an action re-renders the run's page
// region (#run-live) around a new one.
function mountAll() {
  for (const element of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("[data-run-canvas]:not([data-mounted])"))) {
    element.dataset.mounted = "true";
    createRoot(element).render(
      <StrictMode>
        <ReactFlowProvider>
          <Canvas root={element} />
        </ReactFlowProvider>
      </StrictMode>,
    );
  }
}

mountAll();
document.body.addEventListener("htmx:afterSettle", mountAll);
