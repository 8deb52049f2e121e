// @vitest-environment happy-dom
// A lazy picker in a real DOM (happy-dom): the keys pressed while its options are on their way are held and done
// on the full list once it is in, in the order they were pressed; a failed answer leaves an alert and the next
// press asks again; once the list is in, the keys are the select's own. The server is a stand-in fetch whose
// answers the test lets through one at a time (the browser test in tests/browser/test_editor_scale.py asks the
// real one).
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { installLazyOptions, keyToHold, replayKey } from "./lazyOptions.js";

// happy-dom's <option> has no label; a browser's is its label attribute, else its text (the HTML standard's).
if (!("label" in HTMLOptionElement.prototype)) {
  Object.defineProperty(HTMLOptionElement.prototype, "label", {
    get() {
      return this.getAttribute("label") ?? this.text;
    },
  });
}

const NAMES = ["customers", "orders", "line_000", "line_001", "line_002", "totals"];
const OPTIONS = ['<option value="">(the first node)</option>', ...NAMES.map((n) => `<option value="${n}">${n}</option>`)]
  .join("");

/** A stand-in for the picker-options view: each request waits until the test answers it. */
function server() {
  const asked = [];
  const fetch = (url, init) =>
    new Promise((resolve) => {
      asked.push({
        url,
        init,
        answer: (status, body = OPTIONS) =>
          resolve({ ok: status >= 200 && status < 300, status, text: async () => body }),
      });
    });
  return { asked, fetch };
}

/** Let the promise callbacks that follow an answer run. */
async function settle() {
  for (let i = 0; i < 5; i += 1) await Promise.resolve();
  await new Promise((resolve) => setTimeout(resolve, 0));
}

function picker() {
  document.body.innerHTML = `
    <label for="settings-start">Start node</label>
    <select id="settings-start" name="start" data-options-url="/workflows/1/editor/picker-options/?picker=start">
      <option value="orders" selected>orders</option>
    </select>`;
  return /** @type {HTMLSelectElement} */ (document.getElementById("settings-start"));
}

function press(select, key, extra = {}) {
  const event = new KeyboardEvent("keydown", { key, bubbles: true, cancelable: true, ...extra });
  select.dispatchEvent(event);
  return event;
}

let stop = () => {};
let changes = [];

beforeEach(() => {
  changes = [];
  document.addEventListener("change", record);
});

afterEach(() => {
  stop();
  document.removeEventListener("change", record);
  document.body.replaceChildren();
});

function record(event) {
  changes.push(event.target.value);
}

describe("keys pressed while the options load", () => {
  it("are held and done on the full list in the order they were pressed", async () => {
    const { asked, fetch } = server();
    stop = installLazyOptions({ fetch });
    const select = picker();

    const held = ["End", "ArrowUp", "ArrowUp", "PageUp"].map((key) => press(select, key));
    expect(held.every((event) => event.defaultPrevented)).toBe(true); // the one-option select did nothing with them
    expect(asked).toHaveLength(1); // one request for all of them
    expect(asked[0].url).toBe("/workflows/1/editor/picker-options/?picker=start");
    expect(asked[0].init.headers).toEqual({ "HX-Request": "true" });
    expect(select.getAttribute("aria-busy")).toBe("true");
    expect(select.value).toBe("orders");

    asked[0].answer(200);
    await settle();
    // End, then up twice: line_001; then ten up, stopped at the first. In another order the choice would end
    // elsewhere (PageUp first: on totals).
    expect(changes).toEqual(["totals", "line_002", "line_001", ""]);
    expect(select.value).toBe("");
    expect(select.options).toHaveLength(NAMES.length + 1);
    expect(select.hasAttribute("aria-busy")).toBe(false);
    expect(select.hasAttribute("data-options-url")).toBe(false);
  });

  it("keep the choice the select showed when no key moves it", async () => {
    const { asked, fetch } = server();
    stop = installLazyOptions({ fetch });
    const select = picker();
    select.dispatchEvent(new FocusEvent("focusin", { bubbles: true }));
    asked[0].answer(200);
    await settle();
    expect(select.value).toBe("orders");
    expect(changes).toEqual([]);
  });

  it("type to select, from the choice onwards and round from the end", async () => {
    const { asked, fetch } = server();
    stop = installLazyOptions({ fetch });
    const select = picker();
    ["l", "l", "t", "c", "o"].forEach((key) => press(select, key));
    asked[0].answer(200);
    await settle();
    expect(changes).toEqual(["line_000", "line_001", "totals", "customers", "orders"]);
  });

  it("open the list when one of them is a key that opens it, once it is in", async () => {
    const { asked, fetch } = server();
    stop = installLazyOptions({ fetch });
    const select = picker();
    const opened = [];
    select.showPicker = () => opened.push(select.options.length);
    press(select, "ArrowDown", { altKey: true });
    press(select, "Enter");
    expect(opened).toEqual([]);
    asked[0].answer(200);
    await settle();
    expect(opened).toEqual([NAMES.length + 1, NAMES.length + 1]);
    expect(changes).toEqual([]); // Alt+ArrowDown opens; it does not move the choice
  });

  it("a press waits for the list too, then opens it with every option", async () => {
    const { asked, fetch } = server();
    stop = installLazyOptions({ fetch });
    const select = picker();
    const opened = [];
    select.showPicker = () => opened.push(select.options.length);
    const down = new MouseEvent("mousedown", { button: 0, bubbles: true, cancelable: true });
    select.dispatchEvent(down);
    expect(down.defaultPrevented).toBe(true);
    expect(document.activeElement).toBe(select);
    asked[0].answer(200);
    await settle();
    expect(opened).toEqual([NAMES.length + 1]);
  });
});

describe("a failed answer", () => {
  it("leaves an alert by the picker, drops the held keys, and the next press asks again", async () => {
    const { asked, fetch } = server();
    stop = installLazyOptions({ fetch });
    const select = picker();
    press(select, "End");
    asked[0].answer(503, "busy");
    await settle();

    const alert = document.getElementById("settings-start-options-problem");
    expect(alert.getAttribute("role")).toBe("alert");
    expect(alert.textContent).toBe("Could not load the choices (HTTP 503): press the list again to retry.");
    expect(select.getAttribute("aria-describedby")).toBe(alert.id);
    expect(select.nextElementSibling).toBe(alert);
    expect(select.hasAttribute("aria-busy")).toBe(false);
    expect(changes).toEqual([]); // not done on the one option left
    expect(select.dataset.optionsUrl).toBeTruthy(); // still lazy

    const again = press(select, "Home");
    expect(again.defaultPrevented).toBe(true);
    expect(asked).toHaveLength(2);
    asked[1].answer(200);
    await settle();
    expect(changes).toEqual([""]); // Home, the key pressed after the failure, on the full list
    expect(document.getElementById("settings-start-options-problem")).toBeNull();
  });

  it("a network failure says so the same way, once, however often it is retried", async () => {
    const stand = server();
    let fail = true;
    const fetch = (url, init) => (fail ? Promise.reject(new TypeError("Failed to fetch")) : stand.fetch(url, init));
    stop = installLazyOptions({ fetch });
    const select = picker();
    press(select, "ArrowDown");
    await settle();
    press(select, "ArrowDown");
    await settle();
    expect(document.querySelectorAll("[role=alert]")).toHaveLength(1);
    expect(document.querySelector("[role=alert]").textContent).toContain("Failed to fetch");
    fail = false;
    press(select, "ArrowDown");
    stand.asked[0].answer(200);
    await settle();
    expect(changes).toEqual(["line_000"]);
    expect(document.querySelectorAll("[role=alert]")).toHaveLength(0);
  });
});

describe("once the options are in", () => {
  it("keys go to the native control: nothing held, nothing asked again", async () => {
    const { asked, fetch } = server();
    stop = installLazyOptions({ fetch });
    const select = picker();
    press(select, "ArrowDown");
    asked[0].answer(200);
    await settle();
    expect(changes).toEqual(["line_000"]);

    const later = ["ArrowDown", "End", " ", "x"].map((key) => press(select, key));
    select.dispatchEvent(new MouseEvent("mousedown", { button: 0, bubbles: true, cancelable: true }));
    await settle();
    expect(later.some((event) => event.defaultPrevented)).toBe(false);
    expect(asked).toHaveLength(1);
    expect(changes).toEqual(["line_000"]); // the stand-in DOM moves nothing itself: no replay did either
  });

  it("a disabled lazy picker (a viewer's) is left alone", async () => {
    const { asked, fetch } = server();
    stop = installLazyOptions({ fetch });
    const select = picker();
    select.disabled = true;
    expect(press(select, "End").defaultPrevented).toBe(false);
    expect(asked).toHaveLength(0);
  });
});

describe("which keys are held", () => {
  it("those a closed select acts on, not the ones that leave it or belong to the page", () => {
    const plain = { altKey: false, ctrlKey: false, metaKey: false };
    for (const key of [" ", "Enter", "F4", "ArrowDown", "ArrowUp", "ArrowLeft", "ArrowRight", "PageDown", "PageUp",
      "Home", "End", "a", "7"]) {
      expect(keyToHold({ key, ...plain })).toEqual({ key, altKey: false });
    }
    for (const key of ["Tab", "Escape", "Shift", "F5", "Backspace"]) expect(keyToHold({ key, ...plain })).toBeNull();
    expect(keyToHold({ key: "a", ...plain, ctrlKey: true })).toBeNull();
    expect(keyToHold({ key: "z", ...plain, metaKey: true })).toBeNull();
  });

  it("a move past either end stops there, and no change is told when nothing moved", () => {
    const select = picker();
    select.innerHTML = OPTIONS;
    select.value = "totals";
    replayKey(select, { key: "ArrowDown", altKey: false });
    replayKey(select, { key: "PageDown", altKey: false });
    expect(select.value).toBe("totals");
    expect(changes).toEqual([]);
    replayKey(select, { key: "q", altKey: false }); // no option starts with it
    expect(changes).toEqual([]);
  });
});
