// The editor's run panel reloads after each save (the input schema may have changed) and sends what its form
// holds, so the answer keeps it. But the answer carries the input as it was when the request left: typing while
// it is in flight would be undone by the swap. Such an answer is dropped and the panel asked again with what the
// form holds now. A reload that lands while someone is in a field gives the focus (and caret) back to that field.
// A reload also keeps the "Run #N started" notice: a save just before Start (its reload waits 500 ms) used to
// wipe it as soon as it appeared. And a reload answer that lands while a Start is on its way is dropped: it
// would replace the form the Start's answer is bound for, so that answer (the notice) would go nowhere. The
// Start's answer is the whole panel, as current as the reload's.
"use strict";

(function () {
  const SLOT = ".run-panel-slot";
  const sentAt = new WeakMap(); // the reload's XMLHttpRequest -> the edit count when it left
  let edits = 0;
  let focus = null;
  let notice = null;
  const starts = new Set(); // Start requests on their way

  function isStart(detail) {
    return detail.elt instanceof Element && detail.elt.matches(SLOT + " .run-form");
  }

  function isReload(detail) {
    return detail.elt instanceof Element && detail.elt.matches(SLOT);
  }

  function typed(event) {
    if (event.target instanceof Element && event.target.closest(SLOT)) edits += 1;
  }
  document.addEventListener("input", typed);
  document.addEventListener("change", typed);

  document.addEventListener("htmx:beforeRequest", function (event) {
    if (isReload(event.detail)) sentAt.set(event.detail.xhr, edits);
    if (isStart(event.detail)) starts.add(event.detail.xhr);
  });

  // After the answer is swapped, or after an error, a timeout or an abort.
  document.addEventListener("htmx:afterRequest", function (event) {
    starts.delete(event.detail.xhr);
  });

  document.addEventListener("htmx:beforeSwap", function (event) {
    const detail = event.detail;
    if (!isReload(detail) || !sentAt.has(detail.xhr)) return;
    if (starts.size) {
      detail.shouldSwap = false;
      return;
    }
    if (sentAt.get(detail.xhr) !== edits) {
      detail.shouldSwap = false;
      // Queued behind this request by htmx (its default "queue last"), so it leaves with the current values.
      htmx.trigger(detail.elt, "trellis:run-panel-stale");
      return;
    }
    notice = detail.elt.querySelector(".run-panel > .notice");
    const active = document.activeElement;
    focus = active && active.id && detail.elt.contains(active)
      ? { id: active.id, start: /** @type {HTMLInputElement} */ (active).selectionStart,
          end: /** @type {HTMLInputElement} */ (active).selectionEnd }
      : null;
  });

  document.addEventListener("htmx:afterSwap", function (event) {
    if (!isReload(event.detail)) return;
    const head = event.detail.elt.querySelector(".run-panel > .rp-head");
    if (notice && head && !event.detail.elt.querySelector(".run-panel > .notice")) head.after(notice);
    notice = null;
    if (!focus) return;
    const again = /** @type {HTMLInputElement | null} */ (document.getElementById(focus.id));
    const { start, end } = focus;
    focus = null;
    if (!again || !event.detail.elt.contains(again)) return;
    again.focus();
    if (typeof start === "number" && typeof again.setSelectionRange === "function") {
      try { again.setSelectionRange(start, end); } catch (e) { /* not a text field (a number input) */ }
    }
  });
})();
