// The version comparison's canvas: a read-only React Flow drawing of both documents' nodes and
// routes together, each coloured by what the comparison found (added, removed, changed, same).
// Everything it draws comes from the page's JSON (#diff-graph); the diff itself is the server's.
import "@xyflow/react/dist/style.css";
import {
  BaseEdge,
  Background,
  Controls,
  EdgeLabelRenderer,
  // @ts-ignore -- @xyflow/react exports Handle as a component and as a type; a JS file sees only the type
  Handle,
  MarkerType,
  Position,
  ReactFlow,
  ReactFlowProvider,
  getViewportForBounds,
  useNodesInitialized,
  useReactFlow,
} from "@xyflow/react";
import { memo, StrictMode, useEffect, useMemo } from "react";
import { createRoot } from "react-dom/client";

import { autoLayout, readableViewport } from "../editor/layout.js";
import { offsetCurve, parallelOffsets } from "./geometry.js";

// The smallest text on the canvas is 13 px (workflows.css), the editor's too: the first view is fitted to
// the graph but never zoomed out below the editor's READABLE_ZOOM (12 px on screen); a graph too big for
// that shows its start (top left), and the rest is a pan away.
const MARGIN = 24;

function useReadableFit(element) {
  const flow = useReactFlow();
  const measured = useNodesInitialized();
  useEffect(() => {
    if (!measured) return;
    const nodes = flow.getNodes();
    if (!nodes.length) return;
    const bounds = flow.getNodesBounds(nodes);
    const { width, height } = element.getBoundingClientRect();
    const fitted = getViewportForBounds(bounds, width, height, 0.05, 1.25, `${MARGIN}px`);
    const viewport = readableViewport(fitted, bounds, { left: MARGIN, top: MARGIN, bottom: MARGIN }, { width, height });
    flow.setViewport(viewport);
    element.dataset.fitted = "true";
    element.dataset.zoom = viewport.zoom.toFixed(3);
  }, [measured, flow, element]);
}

const COLORS = { added: "#2e7d32", removed: "#c62828", changed: "#ef6c00", same: "#90a4ae" };

function DiffNode({ data }) {
  return (
    <div className={`diff-node is-${data.mark}`} data-testid="diff-node" data-node={data.id} data-mark={data.mark}>
      <Handle type="target" position={Position.Left} />
      <div className="diff-node__head">
        <span className="diff-node__kind">{data.kind}</span>
        {data.mark !== "same" && <span className={`diff-node__mark is-${data.mark}`}>{data.mark}</span>}
      </div>
      <div className="diff-node__title">{data.title}</div>
      {data.subtitle && <div className="diff-node__sub">{data.subtitle}</div>}
      <Handle type="source" position={Position.Right} />
    </div>
  );
}

const nodeTypes = { diff: DiffNode };

// A route bent to its own side when others join the same two nodes (geometry.js), labelled on its curve.
/** @param {import("@xyflow/react").EdgeProps & {data: {offset: number, flip: number}}} props */
function DiffEdge({ id, sourceX, sourceY, targetX, targetY, style, markerEnd, label, data }) {
  const { path, labelX, labelY } = offsetCurve({ sourceX, sourceY, targetX, targetY, offset: data.offset,
                                                 flip: data.flip });
  return (
    <>
      <BaseEdge id={id} path={path} style={style} markerEnd={markerEnd} />
      {label && (
        <EdgeLabelRenderer>
          <div className={`diff-edge-label is-${data.mark}`} data-testid="diff-edge-label" data-route={id}
               style={{ transform: `translate(-50%, -50%) translate(${labelX}px, ${labelY}px)` }}>
            {label}
          </div>
        </EdgeLabelRenderer>
      )}
    </>
  );
}

const edgeTypes = { diff: memo(DiffEdge) };

function Canvas({ graph, element }) {
  useReadableFit(element);
  const { nodes, edges } = useMemo(() => {
    const offsets = parallelOffsets(graph.edges);
    const missing = graph.nodes.filter((node) => !node.position);
    const laidOut = missing.length
      ? autoLayout(graph.nodes.map((node) => ({ id: node.id, labels: [{ name: "ok" }] })), graph.edges, {})
      : {};
    return {
      nodes: graph.nodes.map((node) => ({
        id: node.id,
        type: "diff",
        position: missing.length ? laidOut[node.id] || { x: 0, y: 0 } : node.position,
        draggable: false,
        connectable: false,
        data: { ...node },
      })),
      edges: graph.edges.map((edge) => ({
        id: edge.id,
        source: edge.source,
        target: edge.target,
        label: edge.label,
        type: "diff",
        className: `diff-edge is-${edge.mark}`,
        data: { mark: edge.mark, ...(offsets.get(edge.id) || { offset: 0, flip: 1 }) },
        style: { stroke: COLORS[edge.mark], strokeWidth: edge.mark === "same" ? 1.5 : 2.5,
                 strokeDasharray: edge.mark === "removed" ? "6 4" : undefined },
        markerEnd: { type: MarkerType.ArrowClosed, color: COLORS[edge.mark] },
      })),
    };
  }, [graph]);
  return (
    // Uncontrolled (the drawing never changes): React Flow then records the nodes' measured sizes itself,
    // which the first fit waits for.
    <ReactFlow defaultNodes={nodes} defaultEdges={edges} nodeTypes={nodeTypes} edgeTypes={edgeTypes} nodesDraggable={false}
               nodesConnectable={false} elementsSelectable={false} proOptions={{ hideAttribution: true }}>
      <Background />
      <Controls showInteractive={false} />
    </ReactFlow>
  );
}

const element = document.querySelector("[data-diff-canvas]");
const source = document.getElementById("diff-graph");
if (element && source) {
  const graph = JSON.parse(source.textContent);
  createRoot(element).render(
    <StrictMode>
      <ReactFlowProvider>
        <Canvas graph={graph} element={element} />
      </ReactFlowProvider>
    </StrictMode>,
  );
  /** @type {HTMLElement} */ (element).dataset.ready = "true";
}
