// Wiring between the server-rendered (htmx) panels and the canvas island.
// Everything goes through DOM CustomEvents; delegated listeners survive htmx
// swapping the panels' contents.
import { emit, EVENTS } from "./events.js";
import { clientId } from "./live.js";
import { openPanel } from "./panels.js";
import { currentRevision, editUrl, enqueue } from "./queue.js";

const DRAG_TYPE = "application/x-trellis-node";

function inspector() {
  return document.getElementById("inspector");
}

// htmx queues a second request on the same element behind the one in flight and resolves the second's
// promise at once, before it is even sent; a load started then ("refresh what is shown") dumped the queued
// selection and the inspector kept the old panel. So the loads are serialized here: one in flight, and the
// latest wanted one after it.
let inFlight = null; // the inspector load in flight: {url, nodeId, field, another, refresh}
let wanted = null; // the load asked for while another was in flight; only the latest counts

function inspectorUrl(panel, nodeId, field) {
  const params = new URLSearchParams();
  if (nodeId) params.set("node", nodeId);
  if (field) params.set("field", field);
  return `${panel.dataset.url}?${params}`;
}

// Shows a node's panel (the workflow's for none), as a selection asks: it always replaces what is shown.
function loadInspector(nodeId, field) {
  const panel = inspector();
  if (!panel || !window.htmx) return;
  panel.dataset.node = nodeId || "";
  const load = { url: inspectorUrl(panel, nodeId, field), nodeId: nodeId || "", field,
                 another: (nodeId || "") !== (shownNode() || ""), refresh: false };
  if (inFlight) {
    wanted = load.url === inFlight.url && !inFlight.refresh ? null : load;
    return;
  }
  issueInspectorLoad(load);
}

// Brings the panel up to date with the draft after a change. It is the panel of the node last asked for (a
// selection on its way is already fresh), and it never lands on a panel the person has started working in: a
// name typed while the refresh was on its way stays (``force`` for a conflict, whose panel must show what won).
function refreshInspector({ force = false } = {}) {
  const panel = inspector();
  if (!panel || !window.htmx || wanted) return;
  const nodeId = inFlight ? inFlight.nodeId : shownNode() || "";
  const load = { url: inspectorUrl(panel, nodeId, null), nodeId, field: null, another: false, refresh: !force };
  if (inFlight) wanted = load; // the load in flight may have been read before the change
  else if (force || !inspectorBusy()) issueInspectorLoad(load);
}

function issueInspectorLoad(load) {
  const panel = inspector();
  if (!panel) return;
  inFlight = load;
  const next = () => {
    inFlight = null;
    const after = wanted;
    wanted = null;
    if (after) issueInspectorLoad(after);
  };
  const shown = () => {
    // Another node starts at its top; a focused field is brought into view.
    if (!wanted) {
      const row = load.field && panel.querySelector(".field-row.is-focused");
      if (row) row.scrollIntoView({ block: "nearest" });
      else if (load.another) panel.closest(".editor-side")?.scrollTo({ top: 0 });
    }
    next();
  };
  window.htmx.ajax("GET", load.url, { target: "#inspector", swap: "innerHTML" }).then(shown, next);
}

// A refresh answered after the person started typing in (or opened a picker of) the panel it would replace is
// not shown: their unsaved input stays, and their save is judged against the draft by the server.
function keepBusyPanel(event) {
  const detail = event.detail || {};
  if (!inFlight || !inFlight.refresh || !(detail.target instanceof Element) || detail.target.id !== "inspector") {
    return;
  }
  if (detail.pathInfo && detail.pathInfo.requestPath === inFlight.url && inspectorBusy()) detail.shouldSwap = false;
}

// The diagnostics panel an edit's answer carried (server-rendered and escaped, like any htmx swap).
function showDiagnostics(html) {
  const panel = document.getElementById("diagnostics");
  if (!panel || typeof html !== "string") return;
  if (window.htmx) window.htmx.swap(panel, html, { swapStyle: "innerHTML" });
  else panel.innerHTML = html;
}

function showNotice(message, kind, action) {
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
  box.append(text);
  if (action && Array.isArray(action.ops) && action.ops.length) {
    // The click goes through the document's [data-fix-ops] handler: the operations are sent as an edit.
    const apply = document.createElement("button");
    apply.type = "button";
    apply.className = "small";
    apply.textContent = action.label || "Apply";
    apply.dataset.fixOps = JSON.stringify(action.ops);
    apply.addEventListener("click", () => window.setTimeout(() => bar.replaceChildren(), 0));
    box.append(apply);
  }
  box.append(close);
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
  return rendered ? /** @type {HTMLElement} */ (rendered).dataset.node : panel?.dataset.node;
}

// Busy: the person is typing in it, has a picker open, or a schema builder holds unsaved changes
// (a refresh would re-render the builder from the saved schema and drop them) or was opened on demand
// (a big one: a refresh would fold it again).
function inspectorBusy() {
  const panel = inspector();
  if (!panel) return true;
  return (
    panel.contains(document.activeElement) ||
    Boolean(panel.querySelector(".picker, .schema-builder[data-dirty], .schema-builder[data-opened]"))
  );
}

function isEditRequest(detail) {
  const url = editUrl();
  if (!url || !detail || String(detail.verb).toLowerCase() !== "post") return false;
  // A schema builder's save edits the document through its own endpoint: it waits its turn too.
  if (detail.elt instanceof Element && detail.elt.hasAttribute("data-queued-edit")) return true;
  return new URL(detail.path, window.location.href).pathname === new URL(url, window.location.href).pathname;
}

// A panel's form edit waits its turn in the tab's edit queue and goes out with
// the revision shown when the person sent it (the store's), exactly like a
// canvas edit.
//
// The form may be swapped out of the page while its request is in flight (the
// person selects another node, the inspector reloads). htmx would then fire
// the answer's events on the detached form, where no document listener hears
// them, and swap the old node's panel over the one the person chose. So the
// queue listens on the form itself, and for a detached form it takes the
// answer over: the trellis:* events of its HX-Trigger go to the document
// (without re-selecting the old node) and nothing is swapped.
function announceDetachedAnswer(xhr) {
  // Its diagnostics panel (out of band) is still this draft's.
  const text = xhr && typeof xhr.responseText === "string" ? xhr.responseText : "";
  const oob = text && new DOMParser().parseFromString(text, "text/html").querySelector("#diagnostics[hx-swap-oob]");
  if (oob) showDiagnostics(oob.innerHTML);
  const header = xhr && xhr.getResponseHeader("HX-Trigger");
  if (!header) return;
  let events;
  try {
    events = JSON.parse(header);
  } catch {
    return;
  }
  if (!events || typeof events !== "object") return;
  for (const [name, detail] of Object.entries(events)) {
    if (!name.startsWith("trellis:")) continue;
    const { node: _moved, ...rest } = detail && typeof detail === "object" ? detail : {};
    document.dispatchEvent(new CustomEvent(name, { detail: rest }));
  }
}

function queuePanelEdits() {
  document.addEventListener("htmx:confirm", (event) => {
    if (!isEditRequest(event.detail)) return;
    event.preventDefault();
    const { elt, issueRequest } = event.detail;
    const revision = currentRevision();
    enqueue(
      () =>
        new Promise((resolve) => {
          // htmx sends nothing for an element already gone from the page.
          if (!elt.isConnected) {
            resolve();
            return;
          }
          let timer = null;
          const answered = (loaded) => {
            if (elt.isConnected) return;
            loaded.preventDefault();
            announceDetachedAnswer(loaded.detail && loaded.detail.xhr);
          };
          const finish = () => {
            elt.removeEventListener("htmx:beforeOnLoad", answered);
            elt.removeEventListener("htmx:afterRequest", finish);
            elt.removeEventListener("htmx:validation:halted", finish);
            window.clearTimeout(timer);
            resolve();
          };
          elt.addEventListener("htmx:beforeOnLoad", answered);
          elt.addEventListener("htmx:afterRequest", finish);
          elt.addEventListener("htmx:validation:halted", finish);
          // Last resort for a request htmx drops without any event.
          timer = window.setTimeout(finish, 20000);
          madeOn.set(elt, revision);
          issueRequest(true);
        }),
    );
  });
  document.addEventListener("htmx:configRequest", (event) => {
    if (!isEditRequest(event.detail)) return;
    const elt = event.detail.elt;
    const revision = madeOn.has(elt) ? madeOn.get(elt) : currentRevision();
    madeOn.delete(elt);
    if (revision != null) event.detail.parameters.revision = String(revision);
    event.detail.parameters.client = clientId();
  });
}

// The revision each queued panel edit was made on, from its sending to its request.
const madeOn = new WeakMap();

// One path picker open at a time: opening one closes the others.
function onePicker() {
  document.addEventListener("htmx:afterSwap", (event) => {
    const target = event.detail && event.detail.target;
    if (!(target instanceof Element)) return;
    const opened = target.querySelector(".picker") || (target.matches(".picker") ? target : null);
    if (!opened) return;
    for (const other of document.querySelectorAll(".picker")) {
      if (other !== opened && !other.contains(opened)) other.remove();
    }
  });
}

// "Start a run" in the page's head, and a link to the editor's #run from elsewhere (the runs page with none
// yet): the run panel is at the inspector's foot, under the settings or the node, thousands of pixels down on a
// big workflow. It comes into view, the inspector opened when folded, the focus on its first field.
function showRunPanel() {
  const slot = document.getElementById("run");
  if (!slot) return;
  openPanel("inspector");
  const panel = slot.querySelector("#run-panel");
  if (!panel) {
    // The panel loads after the page: show it once it is in.
    slot.addEventListener("htmx:afterSwap", () => showRunPanel(), { once: true });
    return;
  }
  const still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  slot.scrollIntoView({ block: "start", behavior: still ? "auto" : "smooth" });
  const first = /** @type {HTMLElement | null} */ (
    panel.querySelector(".run-form select, .run-form input:not([type=hidden]), .run-form textarea")
  );
  const heading = /** @type {HTMLElement | null} */ (panel.querySelector("h3"));
  const target = first || heading;
  if (!target) return;
  if (target === heading) heading.tabIndex = -1;
  target.focus({ preventScroll: true });
}

export function installGlue() {
  queuePanelEdits();
  onePicker();
  // Typing in a schema builder makes it unsaved before the server has seen the change.
  document.addEventListener("input", (event) => {
    const builder = event.target instanceof Element && event.target.closest(".schema-builder");
    if (builder) /** @type {HTMLElement} */ (builder).dataset.dirty = "true";
  });
  document.addEventListener(EVENTS.select, (/** @type {CustomEvent} */ event) => {
    const { nodeId, field } = event.detail || {};
    // Selecting (or dragging) the node already shown keeps its panel when a schema builder in it has
    // unsaved changes: reloading would re-render the builder from the saved schema.
    // Asked for a field (a new loop's path, a one-click fix's field): the person must see it, so a folded
    // inspector opens. A plain selection leaves it folded: panels.js.
    if (field) openPanel("inspector");
    const same = (nodeId || "") === (shownNode() || "");
    if (same && !field && inspector()?.querySelector(".schema-builder[data-dirty]")) return;
    loadInspector(nodeId, field);
  });
  document.addEventListener(EVENTS.notice, (/** @type {CustomEvent} */ event) =>
    showNotice(event.detail.message, event.detail.kind || "info", event.detail.action),
  );
  document.addEventListener(EVENTS.documentReloaded, () => refreshInspector({ force: true }));
  // A canvas edit (this tab's or, through the live feed, another person's) can change what the inspector shows
  // (reachability, the diagnostics of a field); refresh it unless the person is working in it.
  document.addEventListener(EVENTS.documentSaved, () => refreshInspector());
  document.addEventListener("htmx:beforeSwap", keepBusyPanel);
  document.addEventListener(EVENTS.diagnostics, (/** @type {CustomEvent} */ event) => showDiagnostics(event.detail && event.detail.html));

  document.addEventListener("click", (event) => {
    const target = /** @type {Element} */ (event.target);
    const focus = /** @type {HTMLElement | null} */ (target.closest("[data-focus-node]"));
    if (focus) {
      const nodeId = focus.dataset.focusNode;
      const field = focus.dataset.focusField || null;
      // "Show" on a diagnostic asks to see the node or the setting: the inspector opens if it was folded.
      openPanel("inspector");
      // Workflow-level problems (no node) live in the workflow settings.
      if (nodeId) emit(EVENTS.focus, { nodeId, field });
      else loadInspector(null, field);
      return;
    }
    if (target.closest("[data-run-jump]")) {
      event.preventDefault(); // the hash alone would scroll a folded inspector's hidden panel
      showRunPanel();
      return;
    }
    const fix = /** @type {HTMLElement | null} */ (target.closest("[data-fix-ops]"));
    if (fix) {
      emit(EVENTS.applyOps, { ops: JSON.parse(fix.dataset.fixOps) });
      return;
    }
    const item = /** @type {HTMLElement | null} */ (target.closest("[data-template]"));
    if (item && !item.closest("[data-readonly]")) {
      emit(EVENTS.addNode, { template: JSON.parse(item.dataset.template) });
    }
  });

  document.addEventListener("dragstart", (event) => {
    const target = /** @type {Element} */ (event.target);
    const item = /** @type {HTMLElement | null} */ (target.closest && target.closest("[data-template]"));
    if (!item || item.closest("[data-readonly]")) return;
    event.dataTransfer.setData(DRAG_TYPE, item.dataset.template);
    event.dataTransfer.effectAllowed = "copy";
  });

  if (window.location.hash === "#run") showRunPanel();
}
