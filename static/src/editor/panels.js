// The editor's side panels, the palette (left) and the inspector (right): each collapses to a narrow rail and
// back, by its heading's button or a key ([ and ]), so on a laptop the canvas can take the room. The state is an
// attribute on <html> (data-palette="collapsed"), which the stylesheet lays out from; this browser remembers it
// for every editor page, and static/js/editor-layout.js sets it again before the next page is first painted.
import { emit, EVENTS } from "./events.js";
import { isTyping } from "./keys.js";

// Read by static/js/editor-layout.js too (a classic script in the head, which cannot import this module).
export const PANELS_KEY = "trellis:editor:panels";
export const PANELS = /** @type {const} */ (["palette", "inspector"]);
// One key each, unmodified, where the canvas's own keys (Delete, Ctrl+Z, F) are not: [ for the left panel, ] for
// the right one, as their places on the keyboard suggest.
const SHORTCUTS = { "[": "palette", "]": "inspector" };

/** The stored choice (JSON, or null) as {palette, inspector}, each true when collapsed; anything unreadable is
 * "open", as on a first visit.
 * @param {string | null} raw */
export function readPanels(raw) {
  let stored = null;
  try {
    stored = JSON.parse(raw || "null");
  } catch {
    stored = null;
  }
  const ok = stored && typeof stored === "object";
  return Object.fromEntries(PANELS.map((panel) => [panel, Boolean(ok && stored[panel] === "collapsed")]));
}

/** @param {Record<string, boolean>} state */
export function writePanels(state) {
  return JSON.stringify(Object.fromEntries(PANELS.map((panel) => [panel, state[panel] ? "collapsed" : "open"])));
}

/** The panel a key press toggles, or null: [ or ] alone, not while typing in a field. On many keyboards (German,
 * French...) [ and ] are typed with AltGr, which Windows reports as Ctrl+Alt: that is still the key alone.
 * @param {{key: string, ctrlKey?: boolean, metaKey?: boolean, altKey?: boolean, target?: EventTarget | null,
 *          getModifierState?: (key: string) => boolean}} event */
export function shortcutPanel(event) {
  const altGraph = Boolean(event.getModifierState && event.getModifierState("AltGraph"));
  if (((event.ctrlKey || event.altKey) && !altGraph) || event.metaKey || isTyping(event.target)) return null;
  return SHORTCUTS[event.key] || null;
}

export function isCollapsed(panel) {
  return document.documentElement.getAttribute(`data-${panel}`) === "collapsed";
}

function toggleButton(panel) {
  return /** @type {HTMLButtonElement | null} */ (document.querySelector(`[data-panel-toggle="${panel}"]`));
}

function showState(panel) {
  const button = toggleButton(panel);
  if (button) button.setAttribute("aria-expanded", String(!isCollapsed(panel)));
}

function remember() {
  const state = Object.fromEntries(PANELS.map((panel) => [panel, isCollapsed(panel)]));
  try {
    window.localStorage.setItem(PANELS_KEY, writePanels(state));
  } catch {
    // storage refused (private mode, quota): the panel still collapses on this page
  }
}

/** Collapses or opens a panel; nothing happens when it already is so.
 * @param {string} panel
 * @param {boolean} collapsed */
export function setPanel(panel, collapsed) {
  if (isCollapsed(panel) === collapsed) return;
  // Before the change: the canvas reads where its drawing is on screen now (hooks.js usePanelRoom).
  emit(EVENTS.panelToggle, { panel, collapsed });
  const holder = document.querySelector(`[data-panel="${panel}"]`);
  const hadFocus = Boolean(holder && holder.contains(document.activeElement));
  if (collapsed) document.documentElement.setAttribute(`data-${panel}`, "collapsed");
  else document.documentElement.removeAttribute(`data-${panel}`);
  showState(panel);
  // A key pressed in the panel must not leave the focus on a control that is gone from view.
  const button = toggleButton(panel);
  if (collapsed && hadFocus && button && document.activeElement !== button) button.focus();
  remember();
}

/** Opens a panel a person asked to see through something else (a diagnostic's link opens the inspector).
 * @param {string} panel */
export function openPanel(panel) {
  setPanel(panel, false);
}

/** What the folded inspector's rail says of the panel the inspector holds: the node's name and kind, or null
 * for the workflow's settings (no node).
 * @param {HTMLElement | null} rendered the inspector's rendered root (.inspector) */
export function railSelection(rendered) {
  const data = rendered ? rendered.dataset : {};
  if (!data.node) return null;
  return { name: data.name || data.node, kind: data.kind || "" };
}

// Filled after each render of the inspector, folded or not, so the rail is right the moment it folds.
function showRailSelection() {
  const holder = /** @type {HTMLElement | null} */ (document.querySelector("[data-rail-selection]"));
  if (!holder) return;
  const selection = railSelection(document.querySelector("#inspector > .inspector"));
  holder.hidden = !selection;
  const name = holder.querySelector("[data-rail-name]");
  const kind = holder.querySelector("[data-rail-kind]");
  if (name) name.textContent = selection ? selection.name : "";
  if (kind) kind.textContent = selection ? selection.kind : "";
}

// The rail's node opens the panel on that node, the focus on its heading: the button pressed is gone with the
// rail, and the heading is where a screen reader then reads which node this is.
function openOnSelection(panel) {
  setPanel(panel, false);
  const heading = /** @type {HTMLElement | null} */ (document.querySelector("#inspector .inspector-head h2"));
  if (!heading) return;
  heading.tabIndex = -1;
  heading.focus();
}

export function installPanels() {
  PANELS.forEach(showState);
  showRailSelection();
  document.body.addEventListener("htmx:afterSwap", (event) => {
    const target = /** @type {CustomEvent} */ (event).detail && /** @type {CustomEvent} */ (event).detail.target;
    if (target instanceof Element && target.id === "inspector") showRailSelection();
  });
  document.addEventListener("click", (event) => {
    const opener = event.target instanceof Element ? event.target.closest("[data-rail-open]") : null;
    if (opener) openOnSelection(/** @type {HTMLElement} */ (opener).dataset.railOpen);
  });
  document.addEventListener("click", (event) => {
    const button = event.target instanceof Element ? event.target.closest("[data-panel-toggle]") : null;
    if (!button) return;
    const panel = /** @type {HTMLElement} */ (button).dataset.panelToggle;
    setPanel(panel, !isCollapsed(panel));
  });
  window.addEventListener("keydown", (event) => {
    const panel = shortcutPanel(event);
    if (!panel || event.repeat) return;
    event.preventDefault();
    setPanel(panel, !isCollapsed(panel));
  });
}
