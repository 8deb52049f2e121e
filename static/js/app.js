// Small page behaviours that would otherwise be inline handlers or htmx hx-on/[filter] attributes.
// The Content-Security-Policy allows only same-origin script files (no inline code, no eval), so
// templates mark elements with data attributes and these delegated listeners act on them; being
// delegated, they also cover fragments htmx swaps in later.
"use strict";

(function () {
  // <button data-remove-closest=".picker">: remove the nearest ancestor matching the selector.
  // <button data-close-closest=".drawer">: take "open" off it instead (the element stays as a swap target).
  document.addEventListener("click", function (event) {
    const button = event.target instanceof Element ? event.target.closest("[data-remove-closest], [data-close-closest]") : null;
    if (!button) return;
    const removeSelector = button.getAttribute("data-remove-closest");
    if (removeSelector) {
      const target = button.closest(removeSelector);
      if (target) target.remove();
      return;
    }
    const target = button.closest(button.getAttribute("data-close-closest"));
    if (target) target.classList.remove("open");
  });

  // <span data-elapsed-ms="12345">: a duration that keeps counting from when the page showed it
  // (a run waiting for an answer is not polled, so the server's figure would freeze).
  function formatDuration(ms) {
    if (ms < 1000) return Math.floor(ms) + " ms";
    const seconds = ms / 1000;
    if (seconds < 60) return seconds.toFixed(1) + " s";
    const minutes = Math.floor(seconds / 60);
    const secs = Math.floor(seconds % 60);
    if (minutes < 60) return minutes + " min " + String(secs).padStart(2, "0") + " s";
    return Math.floor(minutes / 60) + " h " + String(minutes % 60).padStart(2, "0") + " min";
  }
  window.setInterval(function () {
    /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("[data-elapsed-ms]")).forEach(function (element) {
      if (!element.dataset.shownAt) element.dataset.shownAt = String(Date.now());
      const base = Number(element.dataset.elapsedMs);
      if (!Number.isFinite(base)) return;
      element.textContent = formatDuration(base + Date.now() - Number(element.dataset.shownAt));
    });
  }, 1000);

  // Esc closes what floats over a page: path pickers, open drawers, the notice bar's toasts.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape" || event.defaultPrevented) return;
    const open = document.querySelectorAll(".picker, .drawer.open, [data-closes-on-escape]");
    if (!open.length) return;
    open.forEach(function (element) {
      if (element.classList.contains("drawer")) element.classList.remove("open");
      else element.remove();
    });
    event.preventDefault();
  });

  // <div hx-get=... data-hold-while-focused="#form">: skip this element's own htmx requests while
  // the focus is inside the named descendant (someone is choosing a filter; a refresh would swap
  // the <select> away under them).
  document.addEventListener("htmx:confirm", function (event) {
    const elt = event.detail && event.detail.elt;
    if (!(elt instanceof Element)) return;
    const selector = elt.getAttribute("data-hold-while-focused");
    if (!selector) return;
    const held = elt.querySelector(selector);
    if (held && held.contains(document.activeElement)) event.preventDefault();
  });

  // The run page's live feed gets new events appended by every poll: keep the newest few hundred, so a
  // page left open on a long run stays as light as on a short one (the events table has them all).
  const LIVE_FEED_MAX = 300;
  document.addEventListener("htmx:afterSettle", function () {
    const feed = document.getElementById("live-feed");
    if (!feed) return;
    while (feed.childElementCount > LIVE_FEED_MAX) feed.firstElementChild.remove();
  });
})();
