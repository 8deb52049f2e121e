// The editor's side panels as this browser last left them (static/src/editor/panels.js writes the choice), set on
// <html> before the page is first painted: this file is loaded without defer, in the head, so a collapsed panel
// never shows open for a moment and the canvas is measured at its real size from the start. Kept tiny and
// dependency-free for that reason; the key and the format are panels.js's (PANELS_KEY, readPanels).
"use strict";

(function () {
  let stored = null;
  try {
    stored = JSON.parse(window.localStorage.getItem("trellis:editor:panels") || "null");
  } catch {
    stored = null; // storage refused or unreadable: every panel open, as on a first visit
  }
  if (!stored || typeof stored !== "object") return;
  ["palette", "inspector"].forEach(function (panel) {
    if (stored[panel] === "collapsed") document.documentElement.setAttribute("data-" + panel, "collapsed");
  });
})();
