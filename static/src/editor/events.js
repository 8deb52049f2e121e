// The DOM CustomEvents through which the canvas island and the htmx panels
// talk. Names are the contract; both sides import nothing else from each other.
export const EVENTS = {
  select: "trellis:select", // canvas -> panels {nodeId, field}
  focus: "trellis:focus", // panels -> canvas {nodeId, field}: select and show a node
  addNode: "trellis:add-node", // palette (keyboard) -> canvas {template}
  documentChanged: "trellis:document-changed", // panels -> canvas: the server document changed, reload it
  documentSaved: "trellis:document-saved", // canvas -> panels {revision}: a canvas edit was stored
  layoutSaved: "trellis:layout-saved", // canvas -> anyone {revision}: an edit that only moved nodes was stored
  documentReloaded: "trellis:document-reloaded", // canvas -> panels {revision}: canvas replaced its document
  documentLoaded: "trellis:document-loaded", // canvas -> panels {revision}: it loaded a draft it did not edit
  diagnostics: "trellis:diagnostics", // canvas -> panels {html}: the diagnostics panel an edit's answer carried
  notice: "trellis:notice", // anyone -> notice bar {message, kind}
  applyOps: "trellis:apply-ops", // panels -> canvas {ops}: an edit to send through the queue (one-click fixes)
  // panels -> canvas {panel, collapsed}: a side panel is about to collapse or open (sent before the page changes,
  // so the canvas can see where its drawing was on screen)
  panelToggle: "trellis:panel-toggle",
};

export function emit(name, detail = {}) {
  document.dispatchEvent(new CustomEvent(name, { detail, bubbles: true }));
}

// `action` ({ops, label}): a button in the notice that sends those operations (a conflict's "apply mine").
export function notice(message, kind = "info", action = null) {
  emit(EVENTS.notice, action ? { message, kind, action } : { message, kind });
}
