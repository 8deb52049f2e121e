// Entry of the editor island. Placeholder canvas: the editor work replaces
// this with the real workflow canvas; it exists so the build, the manifest
// and {% vite_asset %} are exercised from day one.
import { Background, Controls, ReactFlow } from "@xyflow/react";
import "@xyflow/react/dist/style.css";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";

function Canvas({ nodes, edges }) {
  return (
    <div style={{ width: "100%", height: "100%" }}>
      <ReactFlow defaultNodes={nodes} defaultEdges={edges} fitView>
        <Background />
        <Controls />
      </ReactFlow>
    </div>
  );
}

function mount(element) {
  const data = JSON.parse(element.dataset.graph || '{"nodes": [], "edges": []}');
  createRoot(element).render(
    <StrictMode>
      <Canvas nodes={data.nodes} edges={data.edges} />
    </StrictMode>,
  );
}

for (const element of document.querySelectorAll("[data-editor-canvas]")) {
  mount(element);
}
