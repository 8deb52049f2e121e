// @vitest-environment happy-dom
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

import { afterEach, describe, expect, it } from "vitest";

import { EVENTS } from "./events.js";
import {
  installPanels,
  isCollapsed,
  PANELS_KEY,
  railSelection,
  readPanels,
  setPanel,
  shortcutPanel,
  writePanels,
} from "./panels.js";

// The head script that sets the panels before the first paint, run as the page runs it.
const HEAD_SCRIPT = readFileSync(resolve(import.meta.dirname, "../../js/editor-layout.js"), "utf-8");

function runHeadScript() {
  new Function(HEAD_SCRIPT)();
}

afterEach(() => {
  window.localStorage.clear();
  document.documentElement.removeAttribute("data-palette");
  document.documentElement.removeAttribute("data-inspector");
  document.body.replaceChildren();
});

describe("the side panels' remembered state", () => {
  it("reads back what it wrote, and anything else as every panel open", () => {
    expect(readPanels(writePanels({ palette: true, inspector: false }))).toEqual({ palette: true, inspector: false });
    expect(readPanels(writePanels({ palette: false, inspector: true }))).toEqual({ palette: false, inspector: true });
    for (const raw of [null, "", "not json", "42", "[]", '{"palette": true}', '{"palette": "closed"}']) {
      expect(readPanels(raw)).toEqual({ palette: false, inspector: false });
    }
  });

  it("is what the head script reads before the first paint", () => {
    window.localStorage.setItem(PANELS_KEY, writePanels({ palette: true, inspector: false }));
    runHeadScript();
    expect(isCollapsed("palette")).toBe(true);
    expect(isCollapsed("inspector")).toBe(false);
  });

  it("leaves the page as it is when storage holds nothing readable", () => {
    window.localStorage.setItem(PANELS_KEY, "{broken");
    expect(() => runHeadScript()).not.toThrow();
    expect(isCollapsed("palette") || isCollapsed("inspector")).toBe(false);
  });
});

describe("folding a panel", () => {
  function page() {
    document.body.innerHTML = `
      <aside data-panel="palette"><button data-panel-toggle="palette" aria-expanded="true">Palette</button>
        <div><button id="inside">x</button></div></aside>
      <aside data-panel="inspector"><button data-panel-toggle="inspector" aria-expanded="true">Inspector</button></aside>`;
  }

  it("marks the page, the button and storage, and tells the canvas before the page changes", () => {
    page();
    const seen = [];
    document.addEventListener(EVENTS.panelToggle, (event) =>
      seen.push([/** @type {CustomEvent} */ (event).detail, isCollapsed("inspector")]),
    );
    setPanel("inspector", true);
    expect(seen).toEqual([[{ panel: "inspector", collapsed: true }, false]]);
    expect(document.documentElement.getAttribute("data-inspector")).toBe("collapsed");
    expect(document.querySelector('[data-panel-toggle="inspector"]').getAttribute("aria-expanded")).toBe("false");
    expect(readPanels(window.localStorage.getItem(PANELS_KEY))).toEqual({ palette: false, inspector: true });
    setPanel("inspector", true); // already folded: nothing to tell
    expect(seen).toHaveLength(1);
    setPanel("inspector", false);
    expect(document.documentElement.hasAttribute("data-inspector")).toBe(false);
    expect(readPanels(window.localStorage.getItem(PANELS_KEY))).toEqual({ palette: false, inspector: false });
  });

  it("moves the focus from a control it hides to its button", () => {
    page();
    const inside = /** @type {HTMLElement} */ (document.getElementById("inside"));
    inside.focus();
    setPanel("palette", true);
    expect(document.activeElement).toBe(document.querySelector('[data-panel-toggle="palette"]'));
  });

  it("shows the state the head script set on the buttons once installed", () => {
    page();
    document.documentElement.setAttribute("data-palette", "collapsed");
    installPanels();
    expect(document.querySelector('[data-panel-toggle="palette"]').getAttribute("aria-expanded")).toBe("false");
    expect(document.querySelector('[data-panel-toggle="inspector"]').getAttribute("aria-expanded")).toBe("true");
  });
});

describe("the folded inspector's rail", () => {
  const rendered = (attrs) => {
    const element = document.createElement("div");
    Object.assign(element.dataset, attrs);
    return element;
  };

  it("names the node the inspector holds, by its name and kind, its id when it has no name", () => {
    expect(railSelection(rendered({ node: "fetch", kind: "task", name: "Fetch orders" }))).toEqual({
      name: "Fetch orders",
      kind: "task",
    });
    expect(railSelection(rendered({ node: "fetch", kind: "task" }))).toEqual({ name: "fetch", kind: "task" });
  });

  it("names nothing for the workflow's settings", () => {
    expect(railSelection(rendered({ node: "", kind: "workflow" }))).toBeNull();
    expect(railSelection(null)).toBeNull();
  });

  it("is filled from the inspector's render when installed, and its press opens the panel on the heading", () => {
    document.documentElement.setAttribute("data-inspector", "collapsed");
    document.body.innerHTML = `
      <aside data-panel="inspector"><button data-panel-toggle="inspector" aria-expanded="false">Inspector</button>
        <p data-rail-selection hidden><button data-rail-open="inspector"><span data-rail-name></span>
          (<span data-rail-kind></span>)</button></p>
        <div id="inspector"><div class="inspector" data-node="a" data-kind="branch" data-name="Route by size">
          <div class="inspector-head"><h2>Route by size</h2></div></div></div></aside>`;
    installPanels();
    const holder = /** @type {HTMLElement} */ (document.querySelector("[data-rail-selection]"));
    expect(holder.hidden).toBe(false);
    expect(holder.textContent.replace(/\s+/g, " ").trim()).toBe("Route by size (branch)");
    /** @type {HTMLElement} */ (document.querySelector("[data-rail-open]")).click();
    expect(isCollapsed("inspector")).toBe(false);
    expect(document.activeElement).toBe(document.querySelector(".inspector-head h2"));
  });
});

describe("the panels' keys", () => {
  const body = () => document.body;

  it("are [ for the palette and ] for the inspector, alone", () => {
    expect(shortcutPanel({ key: "[", target: body() })).toBe("palette");
    expect(shortcutPanel({ key: "]", target: body() })).toBe("inspector");
    expect(shortcutPanel({ key: "[", ctrlKey: true, target: body() })).toBeNull();
    expect(shortcutPanel({ key: "]", metaKey: true, target: body() })).toBeNull();
    expect(shortcutPanel({ key: "[", altKey: true, target: body() })).toBeNull();
    for (const key of ["f", "F", "Delete", "z"]) expect(shortcutPanel({ key, target: body() })).toBeNull();
    // AltGr+8 on a German keyboard under Windows: Ctrl and Alt down, AltGraph among the modifiers.
    const altGraph = (name) => name === "AltGraph";
    expect(shortcutPanel({ key: "[", ctrlKey: true, altKey: true, getModifierState: altGraph, target: body() }))
      .toBe("palette");
    expect(shortcutPanel({ key: "]", altKey: true, getModifierState: altGraph, target: body() })).toBe("inspector");
    expect(shortcutPanel({ key: "[", ctrlKey: true, altKey: true, getModifierState: () => false, target: body() }))
      .toBeNull();
  });

  it("are text while typing in a field", () => {
    document.body.innerHTML = '<input id="q"><textarea id="t"></textarea><select id="s"></select>';
    for (const id of ["q", "t", "s"]) {
      expect(shortcutPanel({ key: "[", target: document.getElementById(id) })).toBeNull();
    }
  });
});
