// The editor's side panels: drag a field from the "data" panel onto an input row to bind it (the second way
// in, next to the row's path picker), and the output-binding form's "new state field…" choice.
// Delegated listeners (no inline code under the CSP), so they also cover inspector fragments htmx swaps in.
"use strict";

(function () {
  const TYPE = "application/x-trellis-path";

  document.addEventListener("dragstart", function (event) {
    const item = event.target instanceof Element ? event.target.closest("[data-drag-path]") : null;
    if (!item || !event.dataTransfer) return;
    event.dataTransfer.setData(TYPE, item.getAttribute("data-drag-path"));
    event.dataTransfer.setData("text/plain", item.getAttribute("data-drag-path"));
    event.dataTransfer.effectAllowed = "link";
    document.body.classList.add("is-dragging-path");
  });

  document.addEventListener("dragend", function () {
    document.body.classList.remove("is-dragging-path");
    document.querySelectorAll(".is-drop-target").forEach(function (el) { el.classList.remove("is-drop-target"); });
  });

  function dropRow(event) {
    const row = event.target instanceof Element ? event.target.closest("[data-drop-field]") : null;
    if (!row || !event.dataTransfer || !Array.from(event.dataTransfer.types).includes(TYPE)) return null;
    return row;
  }

  document.addEventListener("dragover", function (event) {
    const row = dropRow(event);
    if (!row) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = "link";
    document.querySelectorAll(".is-drop-target").forEach(function (el) { if (el !== row) el.classList.remove("is-drop-target"); });
    row.classList.add("is-drop-target");
  });

  document.addEventListener("dragleave", function (event) {
    const row = dropRow(event);
    if (row && !row.contains(event.relatedTarget)) row.classList.remove("is-drop-target");
  });

  document.addEventListener("drop", function (event) {
    const row = dropRow(event);
    if (!row) return;
    event.preventDefault();
    row.classList.remove("is-drop-target");
    document.body.classList.remove("is-dragging-path");
    // The row's own hidden form: the same "bind" edit its picker sends, with the revision and CSRF header htmx adds.
    const form = row.querySelector(":scope > .field-actions > form.drop-bind");
    if (!form || !window.htmx) return;
    form.querySelector('input[name="path"]').value = event.dataTransfer.getData(TYPE);
    window.htmx.trigger(form, "submit");
  });

  // <select name="target" data-new-target>: its empty option means "a new state field", typed into the
  // input named new_target next to it.
  document.addEventListener("change", function (event) {
    const select = event.target instanceof HTMLSelectElement && event.target.matches("[data-new-target]") ? event.target : null;
    if (!select) return;
    const input = /** @type {HTMLInputElement | null} */ (select.parentElement.querySelector('input[name="new_' + select.name + '"]'));
    if (!input) return;
    const typing = select.value === "";
    input.hidden = !typing;
    input.disabled = !typing;
    if (typing) input.focus();
  });

  // A long picker (the start node, the output path, a node's state field) comes with the option it shows and the
  // address of the rest (data-options-url): at 600 nodes the first two were 64 KB of the settings panel's 90 KB,
  // sent with the page and again after every save (designer/editor/context.py SELECT_INLINE_OPTIONS). They are asked for when
  // the picker is first reached for (pressed, focused, typed at) and put in before it does anything with them:
  // a press or a key that comes first is held, and done once they are in (the list opens, the choice moves).
  const loads = new WeakMap(); // select -> the promise of its options, while asked for or once in

  // Keys a closed <select> acts on: those that open its list, and those that move its choice without opening it.
  const OPENING = new Set([" ", "Enter", "F4"]);
  const MOVES = { ArrowDown: 1, ArrowUp: -1, ArrowRight: 1, ArrowLeft: -1, PageDown: 10, PageUp: -10 };

  function loadOptions(select) {
    let loading = loads.get(select);
    if (loading) return loading;
    const shown = select.value;
    select.setAttribute("aria-busy", "true");
    loading = window.fetch(select.dataset.optionsUrl, { credentials: "same-origin", headers: { "HX-Request": "true" } })
      .then(function (answer) {
        if (!answer.ok) throw new Error("HTTP " + answer.status);
        return answer.text();
      })
      .then(function (html) {
        // Server-rendered and escaped like any panel htmx swaps in; a template parses it without running anything.
        const parsed = document.createElement("template");
        parsed.innerHTML = html;
        select.replaceChildren(parsed.content);
        select.value = shown;
        select.removeAttribute("data-options-url");
        select.dataset.optionsLoaded = "true";
        showProblem(select, "");
      })
      .catch(function (error) {
        loads.delete(select); // the next press asks again
        showProblem(select, "Could not load the choices (" + error.message + "): press the list again to retry.");
      })
      .finally(function () {
        select.removeAttribute("aria-busy");
      });
    loads.set(select, loading);
    return loading;
  }

  // Said next to the picker, and to a screen reader through its description; gone once the options are in.
  function showProblem(select, text) {
    const id = (select.id || select.name) + "-options-problem";
    let note = document.getElementById(id);
    if (!text) {
      if (note) note.remove();
      return;
    }
    if (!note) {
      note = document.createElement("p");
      note.id = id;
      note.className = "error small";
      note.setAttribute("role", "alert");
      select.insertAdjacentElement("afterend", note);
      select.setAttribute("aria-describedby", id);
    }
    note.textContent = text;
  }

  function openList(select) {
    if (typeof select.showPicker !== "function") return;
    try {
      select.showPicker();
    } catch {
      // no user activation left (a very slow answer): the list is in, the next press opens it
    }
  }

  // A key held while the options were on their way, done on the full list as the closed picker would have.
  function replayKey(select, event) {
    if (OPENING.has(event.key) || (event.altKey && (event.key === "ArrowDown" || event.key === "ArrowUp"))) {
      openList(select);
      return;
    }
    const count = select.options.length;
    let index = select.selectedIndex;
    if (event.key in MOVES) index += MOVES[event.key];
    else if (event.key === "Home") index = 0;
    else if (event.key === "End") index = count - 1;
    else if (event.key.length === 1) {
      // Type to select: the next option whose label starts with the letter typed.
      const letter = event.key.toLowerCase();
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

  function lazySelect(event) {
    const select = event.target;
    return select instanceof HTMLSelectElement && select.dataset.optionsUrl && !select.disabled ? select : null;
  }

  // The focus (by Tab or by a press) asks for them: by the time a key or the list is wanted they are usually in.
  document.addEventListener("focusin", function (event) {
    const select = lazySelect(event);
    if (select) loadOptions(select);
  }, true);

  // A press would open the list with the one option in it: it waits for the rest, then opens it.
  document.addEventListener("mousedown", function (event) {
    const select = lazySelect(event);
    if (!select || event.button !== 0) return;
    event.preventDefault();
    select.focus();
    loadOptions(select).then(function () {
      if (select.dataset.optionsLoaded) openList(select);
    });
  }, true);

  document.addEventListener("keydown", function (event) {
    const select = lazySelect(event);
    if (!select || event.key === "Tab" || event.key === "Escape" || event.ctrlKey || event.metaKey) return;
    if (!(OPENING.has(event.key) || event.key in MOVES || event.key === "Home" || event.key === "End"
          || event.key.length === 1)) return;
    event.preventDefault();
    const key = { key: event.key, altKey: event.altKey };
    loadOptions(select).then(function () {
      if (select.dataset.optionsLoaded) replayKey(select, key);
    });
  }, true);
})();
