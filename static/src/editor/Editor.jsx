// The workflow canvas: puts together the editor's store (store.js: the
// document, its save state and the undo/redo history, every edit through the
// tab's one queue) and the hooks (hooks.js) that draw it with React Flow and
// turn what a person does into edits.
import { MiniMap, Panel, ReactFlowProvider, useReactFlow } from "@xyflow/react";
import { useCallback, useEffect, useRef, useState } from "react";
import { useStore } from "zustand";

import { documentUrl, request, validateUrl } from "./api.js";
import { emit, EVENTS, notice } from "./events.js";
import {
  useDrawing,
  useEditActions,
  useFitGraph,
  useNodeMoves,
  usePanelEvents,
  usePanelRoom,
  useRunOverlay,
  useShortcuts,
} from "./hooks.js";
import { MINIMAP, READABLE_ZOOM } from "./layout.js";
import { startLive } from "./live.js";
import { discardQueued, readRevisionFrom, sendOps } from "./queue.js";
import { createEditorStore } from "./store.js";
import { GraphCanvas, Toolbar } from "./chrome.jsx";
import { drawsVisibleOnly } from "./graph.js";
import { nodeTypes } from "./nodes.jsx";
import { openPanel } from "./panels.js";

// The document asked for as soon as the island's script runs (main.jsx), not after React's first render of the
// canvas: at 600 nodes that render and the other panels' first requests are ~150 ms the page need not wait.
let early = null;

export function askForDocumentEarly({ workflowId, apiBase }) {
  early = request("GET", documentUrl(apiBase, workflowId));
}

function fetchDocumentOnce(apiBase, workflowId) {
  const answer = early || request("GET", documentUrl(apiBase, workflowId));
  early = null;
  return answer;
}

// The store's ties to this page: the server's document and validate endpoints, the queue, and the page's
// revision and save state (the panels' forms and the tests read them from the canvas element).
function pageStore({ workflowId, apiBase, canEdit, root }) {
  const store = createEditorStore({
    canEdit,
    sendOps,
    discardQueued,
    fetchDocument: () => fetchDocumentOnce(apiBase, workflowId),
    fetchAnalysis: () => request("POST", validateUrl(apiBase, workflowId), {}),
    publish: (revision, state) => {
      root.dataset.revision = String(revision);
      root.dataset.state = state;
      const field = /** @type {HTMLInputElement | null} */ (document.getElementById("editor-revision"));
      if (field) field.value = String(revision);
    },
    notice,
    emit: (name, detail) => emit(EVENTS[name], detail),
  });
  // The panels' edits go out on the revision the store shows; nothing else keeps one.
  readRevisionFrom(() => store.getState().status.revision);
  return store;
}

function Canvas({ workflowId, apiBase, canEdit, root }) {
  const flow = useReactFlow();
  const [store] = useState(() => pageStore({ workflowId, apiBase, canEdit, root }));
  const status = useStore(store, (s) => s.status);
  const history = useStore(store, (s) => s.history);
  const undo = useStore(store, (s) => s.undo);
  const redo = useStore(store, (s) => s.redo);
  const wrapper = useRef(null);

  useEffect(() => {
    store.getState().load();
  }, [store]);
  // Others' changes and presence, as they land (live.js).
  useEffect(
    () => startLive({ root, store, notice, emit: (name, detail) => emit(EVENTS[name], detail) }),
    [root, store],
  );

  const { runs, runOverlay, loadRuns, showRun, onNodeClick } = useRunOverlay(root);
  const { doc, analysis, nodes, setNodes, frames, drawnEdges, onEdgesChange, selectOnly } = useDrawing(store, {
    canEdit,
    runOverlay,
  });
  const { fitGraph, framesRef, lastFit } = useFitGraph({ flow, store, root, wrapper, frames, nodes });
  usePanelRoom({ flow, wrapper, fitGraph, lastFit, root });
  const onNodesChange = useNodeMoves({ canEdit, flow, store, setNodes });
  const actions = useEditActions({ store, canEdit, flow, framesRef, nodes, analysis, fitGraph, wrapper });
  const fit = useCallback(() => fitGraph(200), [fitGraph]);
  usePanelEvents({ store, canEdit, flow, wrapper, addTemplate: actions.addTemplate, selectOnly });
  useShortcuts({ canEdit, undo, redo, fit });

  const empty = doc && doc.nodes.length === 0;

  return (
    <div className="wf-canvas" ref={wrapper} onDragOver={actions.onDragOver} onDrop={actions.onDrop}>
      <Toolbar
        canEdit={canEdit}
        status={status}
        historySize={{ undo: history.undo.length, redo: history.redo.length }}
        onUndo={undo}
        onRedo={redo}
        onFit={fit}
        onZoomIn={() => flow.zoomIn({ duration: 150 })}
        onZoomOut={() => flow.zoomOut({ duration: 150 })}
        onLayout={actions.layoutAll}
        runs={runs}
        run={runOverlay}
        onRunsOpen={loadRuns}
        onRun={showRun}
      />
      <div className="wf-flow">
        <GraphCanvas
          frames={frames}
          loops={runOverlay ? runOverlay.loops : null}
          nodes={nodes}
          edges={drawnEdges}
          nodeTypes={nodeTypes}
          onNodesChange={onNodesChange}
          onEdgesChange={onEdgesChange}
          onDelete={actions.onDelete}
          onConnect={actions.onConnect}
          onReconnect={actions.onReconnect}
          onReconnectStart={actions.onReconnectStart}
          onReconnectEnd={actions.onReconnectEnd}
          onSelectionChange={actions.onSelectionChange}
          onNodeClick={onNodeClick}
          // A click selects a node and leaves a folded inspector folded (it came with every press of a drag);
          // a double click asks to inspect it, and opens it.
          onNodeDoubleClick={inspectNode}
          nodesDraggable={canEdit}
          // A node is selected by the press, not by the click: nodes laid out close together can trade places
          // under the pointer between press and release (seen under load), and a click then goes to their
          // common parent and selects nothing (issue 34's lost first click). A press that does not move saves no move.
          nodeDragThreshold={0}
          nodesConnectable={canEdit}
          edgesReconnectable={canEdit}
          deleteKeyCode={canEdit ? ["Delete", "Backspace"] : null}
          multiSelectionKeyCode={["Meta", "Control"]}
          selectionKeyCode="Shift"
          minZoom={READABLE_ZOOM}
          onlyRenderVisibleElements={Boolean(doc) && drawsVisibleOnly(doc)}
          aria-label="Workflow canvas"
        >
          {/* Top right, above where the fit starts the drawing (useFitGraph), so it covers no node at first. */}
          <MiniMap
            pannable
            zoomable
            position="top-right"
            className="wf-minimap"
            style={{ width: MINIMAP.width, height: MINIMAP.height }}
            nodeStrokeWidth={3}
            nodeColor={minimapColor}
            ariaLabel="Overview of the whole graph"
          />
          {empty && (
            <Panel position="top-center" className="wf-empty">
              {canEdit
                ? "Drag a task or a control node from the palette to start."
                : "This workflow has no nodes yet."}
            </Panel>
          )}
        </GraphCanvas>
      </div>
    </div>
  );
}

function inspectNode() {
  openPanel("inspector");
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
