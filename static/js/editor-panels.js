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
})();
