// A long picker (the start node, the output path, a node's state field) comes with the option it shows and the
// address of the rest (data-options-url): at 600 nodes the first two were 64 KB of the settings panel's 90 KB,
// sent with the page and again after every save (designer/editor/context.py SELECT_INLINE_OPTIONS). They are asked
// for when the picker is first reached for (pressed, focused, typed at) and put in before it does anything with
// them: a press or a key that comes first is held, and done once they are in (the list opens, the choice moves).
// Once they are in, the select is an ordinary one: its keys are the browser's own.
// Delegated listeners, so they cover the inspector fragments htmx swaps in too.

/** @typedef {{ key: string, altKey: boolean }} HeldKey */
/** @typedef {(url: string, init: RequestInit) => Promise<{ ok: boolean, status: number, text(): Promise<string> }>} Fetch */

/** Keys a closed <select> opens its list on. */
export const OPENING = new Set([" ", "Enter", "F4"]);
/** Keys that move a closed <select>'s choice without opening it, by how many options. */
export const MOVES = { ArrowDown: 1, ArrowUp: -1, ArrowRight: 1, ArrowLeft: -1, PageDown: 10, PageUp: -10 };

/**
 * The key to hold for a picker whose options are not in yet: one a closed select would act on. Null for the keys
 * it lets by (Tab and Escape leave, a shortcut with Ctrl or Meta is the page's or the browser's).
 * @param {{ key: string, altKey: boolean, ctrlKey: boolean, metaKey: boolean }} event
 * @returns {HeldKey | null}
 */
export function keyToHold(event) {
  const { key } = event;
  if (key === "Tab" || key === "Escape" || event.ctrlKey || event.metaKey) return null;
  if (!(OPENING.has(key) || key in MOVES || key === "Home" || key === "End" || key.length === 1)) return null;
  return { key, altKey: event.altKey };
}

/** @param {HTMLSelectElement} select */
function openList(select) {
  if (typeof select.showPicker !== "function") return;
  try {
    select.showPicker();
  } catch {
    // no user activation left (a very slow answer): the list is in, the next press opens it
  }
}

/**
 * Do a held key on the full list as the closed picker would have: open it, or move the choice (telling the page
 * with input and change events, as a person's choice does).
 * @param {HTMLSelectElement} select
 * @param {HeldKey} held
 */
export function replayKey(select, held) {
  const { key } = held;
  if (OPENING.has(key) || (held.altKey && (key === "ArrowDown" || key === "ArrowUp"))) {
    openList(select);
    return;
  }
  const count = select.options.length;
  let index = select.selectedIndex;
  if (key in MOVES) index += MOVES[key];
  else if (key === "Home") index = 0;
  else if (key === "End") index = count - 1;
  else if (key.length === 1) {
    // Type to select: the next option whose label starts with the letter typed, round from the end to the start.
    const letter = key.toLowerCase();
    for (let step = 1; step <= count; step += 1) {
      const option = select.options[(index + step) % count];
      if (option.label.trim().toLowerCase().startsWith(letter)) {
        index = option.index;
        break;
      }
    }
  }
  index = Math.max(0, Math.min(count - 1, index));
  if (index === select.selectedIndex) return;
  select.selectedIndex = index;
  select.dispatchEvent(new Event("input", { bubbles: true }));
  select.dispatchEvent(new Event("change", { bubbles: true }));
}

/**
 * Said next to the picker, and to a screen reader through its description; gone once the options are in.
 * @param {HTMLSelectElement} select
 * @param {string} text
 */
function showProblem(select, text) {
  const doc = select.ownerDocument;
  const id = (select.id || select.name) + "-options-problem";
  let note = doc.getElementById(id);
  if (!text) {
    if (note) note.remove();
    return;
  }
  if (!note) {
    note = doc.createElement("p");
    note.id = id;
    note.className = "error small";
    note.setAttribute("role", "alert");
    select.insertAdjacentElement("afterend", note);
    select.setAttribute("aria-describedby", id);
  }
  note.textContent = text;
}

/**
 * Listen on ``root`` for lazy pickers being reached for, asking ``fetch`` for their options. Returns the function
 * that stops listening.
 * @param {{ root?: Document, fetch?: Fetch }} [options]
 * @returns {() => void}
 */
export function installLazyOptions({ root = document, fetch = (url, init) => window.fetch(url, init) } = {}) {
  /** @type {WeakMap<HTMLSelectElement, Promise<void>>} select -> the promise of its options, while asked for or in */
  const loads = new WeakMap();

  /** @param {HTMLSelectElement} select */
  function loadOptions(select) {
    let loading = loads.get(select);
    if (loading) return loading;
    const shown = select.value;
    select.setAttribute("aria-busy", "true");
    loading = fetch(select.dataset.optionsUrl, { credentials: "same-origin", headers: { "HX-Request": "true" } })
      .then((answer) => {
        if (!answer.ok) throw new Error("HTTP " + answer.status);
        return answer.text();
      })
      .then((html) => {
        // Server-rendered and escaped like any panel htmx swaps in; a template parses it without running anything.
        const parsed = select.ownerDocument.createElement("template");
        parsed.innerHTML = html;
        select.replaceChildren(parsed.content);
        select.value = shown;
        select.removeAttribute("data-options-url");
        select.dataset.optionsLoaded = "true";
        showProblem(select, "");
      })
      .catch((error) => {
        loads.delete(select); // the next press asks again
        showProblem(select, "Could not load the choices (" + error.message + "): press the list again to retry.");
      })
      .finally(() => {
        select.removeAttribute("aria-busy");
      });
    loads.set(select, loading);
    return loading;
  }

  /** @param {Event} event */
  function lazySelect(event) {
    const select = event.target;
    return select instanceof HTMLSelectElement && select.dataset.optionsUrl && !select.disabled ? select : null;
  }

  // The focus (by Tab or by a press) asks for them: by the time a key or the list is wanted they are usually in.
  /** @param {FocusEvent} event */
  function onFocus(event) {
    const select = lazySelect(event);
    if (select) loadOptions(select);
  }

  // A press would open the list with the one option in it: it waits for the rest, then opens it.
  /** @param {MouseEvent} event */
  function onPress(event) {
    const select = lazySelect(event);
    if (!select || event.button !== 0) return;
    event.preventDefault();
    select.focus();
    loadOptions(select).then(() => {
      if (select.dataset.optionsLoaded) openList(select);
    });
  }

  // Each held key waits on the same promise, so they are done in the order they were pressed.
  /** @param {KeyboardEvent} event */
  function onKey(event) {
    const select = lazySelect(event);
    const held = select && keyToHold(event);
    if (!held) return;
    event.preventDefault();
    loadOptions(select).then(() => {
      if (select.dataset.optionsLoaded) replayKey(select, held);
    });
  }

  root.addEventListener("focusin", onFocus, true);
  root.addEventListener("mousedown", onPress, true);
  root.addEventListener("keydown", onKey, true);
  return () => {
    root.removeEventListener("focusin", onFocus, true);
    root.removeEventListener("mousedown", onPress, true);
    root.removeEventListener("keydown", onKey, true);
  };
}
