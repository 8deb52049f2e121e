// Wiring between the server-rendered (htmx) panels and the canvas island.
// Everything goes through DOM CustomEvents; delegated listeners survive htmx
// swapping the panels' contents.
import { emit, EVENTS } from "./events.js";

const DRAG_TYPE = "application/x-trellis-node";

function inspector() {
  return document.getElementById("inspector");
}

let pending = null; // URL of the inspector load in flight, to skip identical repeats

function loadInspector(nodeId, field) {
  const panel = inspector();
  if (!panel || !window.htmx) return;
  const params = new URLSearchParams();
  if (nodeId) params.set("node", nodeId);
  if (field) params.set("field", field);
  panel.dataset.node = nodeId || "";
  const url = `${panel.dataset.url}?${params}`;
  if (url === pending) return;
  pending = url;
  const another = (nodeId || "") !== (shownNode() || "");
  const done = () => {
    if (pending === url) pending = null;
  };
  const shown = () => {
    done();
    // Another node starts at its top; a focused field is brought into view.
    const row = field && panel.querySelector(".field-row.is-focused");
    if (row) row.scrollIntoView({ block: "nearest" });
    else if (another) panel.closest(".editor-side")?.scrollTo({ top: 0 });
  };
  window.htmx.ajax("GET", url, { target: "#inspector", swap: "innerHTML" }).then(shown, done);
}

function showNotice(message, kind) {
  const bar = document.getElementById("editor-notice");
  if (!bar) return;
  bar.replaceChildren();
  const box = document.createElement("div");
  box.className = `editor-toast editor-toast--${kind}`;
  box.setAttribute("role", kind === "info" ? "status" : "alert");
  const text = document.createElement("span");
  text.textContent = message;
  const close = document.createElement("button");
  close.type = "button";
  close.className = "editor-toast__close";
  close.setAttribute("aria-label", "Dismiss notice");
  close.textContent = "×";
  close.addEventListener("click", () => bar.replaceChildren());
  box.append(text, close);
  bar.append(box);
  // Good news fades on its own; conflicts and errors stay until dismissed.
  if (kind === "success" || kind === "info") {
    window.setTimeout(() => box.remove(), 6000);
  }
}

// The node the inspector shows, as the server last rendered it (a rename in
// the inspector changes it without a canvas selection).
function shownNode() {
  const panel = inspector();
  const rendered = panel && panel.querySelector(".inspector[data-node]");
  return rendered ? rendered.dataset.node : panel?.dataset.node;
}

function inspectorBusy() {
  const panel = inspector();
  if (!panel) return true;
  return panel.contains(document.activeElement) || Boolean(panel.querySelector(".picker"));
}

export function installGlue() {
  document.addEventListener(EVENTS.select, (event) => {
    const { nodeId, field } = event.detail || {};
    loadInspector(nodeId, field);
  });
  document.addEventListener(EVENTS.notice, (event) => showNotice(event.detail.message, event.detail.kind || "info"));
  document.addEventListener(EVENTS.documentReloaded, () => loadInspector(shownNode()));
  // A canvas edit can change what the inspector shows (reachability, the
  // diagnostics of a field); refresh it unless the person is working in it.
  document.addEventListener(EVENTS.documentSaved, () => {
    if (!inspectorBusy() && !pending) loadInspector(shownNode());
  });

  document.addEventListener("click", (event) => {
    const focus = event.target.closest("[data-focus-node]");
    if (focus) {
      const nodeId = focus.dataset.focusNode;
      const field = focus.dataset.focusField || null;
      // Workflow-level problems (no node) live in the workflow settings.
      if (nodeId) emit(EVENTS.focus, { nodeId, field });
      else loadInspector(null, field);
      return;
    }
    const item = event.target.closest("[data-template]");
    if (item && !item.closest("[data-readonly]")) {
      emit(EVENTS.addNode, { template: JSON.parse(item.dataset.template) });
    }
  });

  document.addEventListener("dragstart", (event) => {
    const item = event.target.closest && event.target.closest("[data-template]");
    if (!item || item.closest("[data-readonly]")) return;
    event.dataTransfer.setData(DRAG_TYPE, item.dataset.template);
    event.dataTransfer.effectAllowed = "copy";
  });
}
