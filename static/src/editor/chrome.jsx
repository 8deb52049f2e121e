// The canvas's own chrome: loop-body frames drawn under the nodes, and the toolbar (a row above the
// drawing, so it never covers a node however narrow the canvas).
import { Background, ReactFlow, ViewportPortal } from "@xyflow/react";

import { memo, useCallback, useRef } from "react";

import { edgeTypes } from "./edges.jsx";
import { arrowheadId, ROUTE_COLORS } from "./graph.js";
import { KindIcon } from "./icons.jsx";

function loopProgress(loop) {
  if (!loop) return null;
  const total = loop.total == null ? "?" : loop.total;
  return `${loop.done}/${total} done${loop.failed ? `, ${loop.failed} failed` : ""}`;
}

export function Frames({ frames, loops = null }) {
  return (
    <ViewportPortal>
      {frames.map((frame) => (
        <div
          key={frame.id}
          className="wf-frame"
          data-foreach={frame.id}
          style={/** @type {import("react").CSSProperties} */ ({
            transform: `translate(${frame.x}px, ${frame.y}px)`,
            width: frame.width,
            height: frame.height,
            "--region-color": frame.color,
          })}
        >
          <span className="wf-frame__label">
            <KindIcon kind="foreach" size={11} /> {frame.label} · loop body
            {loops && (
              <span
                className={`wf-frame__progress${loops[frame.id] && loops[frame.id].failed ? " has-failed" : ""}`}
                data-testid="loop-progress"
              >
                {loopProgress(loops[frame.id]) || "not run"}
              </span>
            )}
          </span>
        </div>
      ))}
    </ViewportPortal>
  );
}

function statusText(status) {
  if (status.state === "loading") return "Loading…";
  if (status.state === "saving") return "Saving…";
  if (status.state === "error") return "Not saved";
  return `Saved · revision ${status.revision}`;
}

export function Toolbar({
  canEdit, status, historySize, onUndo, onRedo, onFit, onZoomIn, onZoomOut, onLayout, runs, run, onRunsOpen, onRun,
}) {
  return (
    <div className="wf-toolbar" role="toolbar" aria-label="Canvas tools">
      {canEdit && (
        <>
          <button type="button" onClick={onUndo} disabled={!historySize.undo} title="Undo (Ctrl+Z)" aria-label="Undo">
            <span aria-hidden="true">↶</span> <span className="wf-tool__text">Undo</span>
          </button>
          <button type="button" onClick={onRedo} disabled={!historySize.redo} title="Redo (Ctrl+Shift+Z)" aria-label="Redo">
            <span aria-hidden="true">↷</span> <span className="wf-tool__text">Redo</span>
          </button>
          <span className="wf-toolbar__sep" />
        </>
      )}
      {/* The zoom buttons live here rather than over the drawing, where they covered nodes. */}
      <button type="button" onClick={onZoomIn} title="Zoom in" aria-label="Zoom in">
        <span aria-hidden="true">+</span>
      </button>
      <button type="button" onClick={onZoomOut} title="Zoom out" aria-label="Zoom out">
        <span aria-hidden="true">−</span>
      </button>
      <button type="button" onClick={onFit} title="Fit the graph in view (F)" aria-label="Fit">
        <span aria-hidden="true">⤢</span> <span className="wf-tool__text">Fit</span>
      </button>
      {canEdit && (
        <button type="button" onClick={onLayout} title="Arrange nodes automatically" aria-label="Layout">
          <span aria-hidden="true">⇶</span> <span className="wf-tool__text">Layout</span>
        </button>
      )}
      <span className="wf-toolbar__sep" />
      <select
        className="wf-run-choice"
        aria-label="Show a run on the graph"
        value={run ? String(run.run.id) : ""}
        onFocus={onRunsOpen}
        onChange={(event) => onRun(event.target.value)}
      >
        <option value="">No run shown</option>
        {runs.map((item) => (
          <option key={item.id} value={String(item.id)}>
            {item.label}
          </option>
        ))}
      </select>
      <span className={`wf-status wf-status--${status.state}`} role="status" data-testid="save-status">
        {statusText(status)}
      </span>
      {!canEdit && <span className="wf-readonly">Read-only</span>}
    </div>
  );
}

const NO_ATTRIBUTION = { hideAttribution: true };

// The canvas a workflow is drawn on, by the editor and by the run page: its edges, its foreach frames (with the
// run's loop counts, `loops`) and the grid. Each page gives its nodes, handlers and own controls (`children`).
// The routes' arrowheads (graph.js arrowheadId), drawn as React Flow draws its closed arrow: 18 px, in the route's
// colour. Routes keep their colours, so these never change.
const Arrowheads = memo(function Arrowheads() {
  return (
    <svg className="wf-arrowheads" aria-hidden="true">
      <defs>
        {ROUTE_COLORS.map((color) => (
          <marker
            key={color}
            id={arrowheadId(color)}
            className="react-flow__arrowhead"
            markerWidth="18"
            markerHeight="18"
            viewBox="-10 -10 20 20"
            markerUnits="strokeWidth"
            orient="auto-start-reverse"
            refX="0"
            refY="0"
          >
            <polyline
              className="arrowclosed"
              style={{ strokeWidth: 1, stroke: color, fill: color }}
              strokeLinecap="round"
              strokeLinejoin="round"
              points="-5,-4 0,0 -5,4 -5,-4"
            />
          </marker>
        ))}
      </defs>
    </svg>
  );
});

// A press on a node selects it (nodeDragThreshold 0). Something can move the drawing before the release (a fit,
// a redraw that moves nodes; seen under load): the click then goes to the empty pane, where React Flow clears the
// selection the press just made. That click is the press's own, not a click on the empty canvas: it stops here.
function usePressedNodeClicks() {
  const pressedOnNode = useRef(false);
  const onPointerDownCapture = useCallback((event) => {
    // A press on a handle starts a connection, whose end on the pane React Flow's own click handler must see.
    const target = event.target instanceof Element ? event.target : null;
    pressedOnNode.current = Boolean(target && target.closest(".react-flow__node") && !target.closest(".react-flow__handle"));
  }, []);
  const onClickCapture = useCallback((event) => {
    const onPane = event.target instanceof Element && event.target.classList.contains("react-flow__pane");
    if (pressedOnNode.current && onPane) event.stopPropagation();
    pressedOnNode.current = false;
  }, []);
  return { onPointerDownCapture, onClickCapture };
}

export function GraphCanvas({ frames, loops, children, ...flow }) {
  const pressedNodeClicks = usePressedNodeClicks();
  return (
    <ReactFlow edgeTypes={edgeTypes} maxZoom={2} proOptions={NO_ATTRIBUTION} {...pressedNodeClicks} {...flow}>
      <Arrowheads />
      <Frames frames={frames} loops={loops} />
      <Background gap={20} size={1.2} color="#d3d8e0" />
      {children}
    </ReactFlow>
  );
}
