// Entry of the editor island: mounts the React Flow canvas on
// [data-editor-canvas] and wires it to the htmx panels around it.
import "@xyflow/react/dist/style.css";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";

import { askForDocumentEarly, Editor } from "./Editor.jsx";
import { installGlue } from "./glue.js";
import { installLazyOptions } from "./lazyOptions.js";
import { installPanels } from "./panels.js";
import { installSplit } from "./split.js";

const element = /** @type {HTMLElement | null} */ (document.querySelector("[data-editor-canvas]"));
if (element) {
  const workflowId = element.dataset.workflowId;
  const apiBase = element.dataset.apiBase || "/api/";
  askForDocumentEarly({ workflowId, apiBase });
  installGlue();
  installSplit();
  installPanels();
  installLazyOptions();
  createRoot(element).render(
    <StrictMode>
      <Editor
        workflowId={workflowId}
        apiBase={apiBase}
        canEdit={element.dataset.canEdit === "true"}
        root={element}
      />
    </StrictMode>,
  );
}
