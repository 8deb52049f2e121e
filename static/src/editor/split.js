// The split between the canvas and the diagnostics below it: drag the handle, or focus it and use
// the arrow keys (Home/End for the smallest/largest). The height is remembered per user in this
// browser. Only the person resizes it, so diagnostics arriving after a save never move the canvas.
const MIN = 48; // px: the diagnostics heading stays visible
const STEP = 24;
// The band's height until the person sets one: editor.css's fallback for --diagnostics-height, in rem.
const DEFAULT_REM = 9.5;

function storageKey(centre) {
  return `trellis:editor:diagnostics-height:${centre.dataset.user || "anonymous"}`;
}

function largest(centre) {
  // The canvas keeps at least 160px (and its toolbar).
  return Math.max(MIN, centre.clientHeight - 160);
}

function apply(centre, handle, height, remember) {
  const bounded = Math.round(Math.min(Math.max(height, MIN), largest(centre)));
  centre.style.setProperty("--diagnostics-height", `${bounded}px`);
  handle.setAttribute("aria-valuenow", String(bounded));
  handle.setAttribute("aria-valuemax", String(largest(centre)));
  if (remember) {
    try {
      window.localStorage.setItem(storageKey(centre), String(bounded));
    } catch {
      // storage refused (private mode, quota): the split still works for this page
    }
  }
  return bounded;
}

function defaultHeight() {
  return DEFAULT_REM * (parseFloat(window.getComputedStyle(document.documentElement).fontSize) || 16);
}

function current(centre) {
  const panel = centre.querySelector(".editor-diagnostics");
  return panel ? panel.getBoundingClientRect().height : MIN;
}

export function installSplit() {
  const centre = document.querySelector(".editor-centre");
  const handle = centre && /** @type {HTMLElement | null} */ (centre.querySelector("[data-split-handle]"));
  if (!centre || !handle) return;
  // Not the band's measured height: with no problems to list it is one line (editor.css), and the height it
  // takes with problems is the one the person chose, or the default.
  const chosen = () => {
    try {
      const stored = Number(window.localStorage.getItem(storageKey(centre)));
      return stored > 0 ? stored : defaultHeight();
    } catch {
      return defaultHeight(); // storage refused: the default
    }
  };
  apply(centre, handle, chosen(), false);

  handle.addEventListener("keydown", (event) => {
    const height = current(centre);
    const next = {
      ArrowUp: height + STEP,
      ArrowDown: height - STEP,
      PageUp: height + STEP * 4,
      PageDown: height - STEP * 4,
      Home: MIN,
      End: largest(centre),
    }[event.key];
    if (next === undefined) return;
    event.preventDefault();
    apply(centre, handle, next, true);
  });

  handle.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    event.preventDefault();
    handle.setPointerCapture(event.pointerId);
    const bottom = centre.getBoundingClientRect().bottom;
    centre.classList.add("is-resizing");
    const move = (moved) => apply(centre, handle, bottom - moved.clientY, false);
    const end = (ended) => {
      handle.removeEventListener("pointermove", move);
      handle.removeEventListener("pointerup", end);
      handle.removeEventListener("pointercancel", end);
      centre.classList.remove("is-resizing");
      apply(centre, handle, bottom - ended.clientY, true);
    };
    handle.addEventListener("pointermove", move);
    handle.addEventListener("pointerup", end);
    handle.addEventListener("pointercancel", end);
  });

  // A smaller window keeps the split within bounds (not remembered: the person did not choose it).
  // Back to the chosen height once the window is large enough again.
  window.addEventListener("resize", () => apply(centre, handle, chosen(), false));
}
