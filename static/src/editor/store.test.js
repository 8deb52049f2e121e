// The editor's store, driven through the real edit queue (queue.js, which
// sends each edit with the store's revision it was made on) by a fake server
// behind fetch that answers like the editor's write endpoint: an edit on the
// current revision is stored and answered with the next revision and the
// operations that undo it; one on an older revision is rebased (stored too),
// unless a test makes it a conflict (server.answer).
// @vitest-environment happy-dom
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { discardQueued, sendOps } from "./queue.js";
import { createEditorStore, HISTORY_LIMIT } from "./store.js";

function fakeServer() {
  const server = {
    revision: 1,
    nodes: [],
    received: [],
    revisions: [], // the revision each edit was sent on
    gates: [], // unanswered edits wait here when `hold` is on
    hold: false,
    answer: null, // an override for the next answer: {status, data} or an Error to throw
    documentAnswer() {
      return { document: { nodes: server.nodes.map((id) => ({ id })), routes: [] }, revision: server.revision };
    },
    async apply(ops, revision) {
      server.received.push(ops);
      if (server.hold) await new Promise((resolve) => server.gates.push(resolve));
      if (server.answer) {
        const answer = server.answer;
        server.answer = null;
        if (answer instanceof Error) throw answer;
        return answer;
      }
      server.revisions.push(revision);
      const undo = [];
      for (const op of ops) {
        if (op.op === "add_node") {
          server.nodes.push(op.id);
          undo.unshift({ op: "remove_nodes", ids: [op.id] });
        } else if (op.op === "remove_nodes") {
          server.nodes = server.nodes.filter((id) => !op.ids.includes(id));
          for (const id of op.ids) undo.unshift({ op: "add_node", id });
        }
      }
      server.revision += 1;
      return { status: 200, data: { ...server.documentAnswer(), undo, analysis: { labels: {} }, diagnostics: [] } };
    },
    release() {
      for (const resolve of server.gates.splice(0)) resolve();
    },
  };
  return server;
}

function setUp({ canEdit = true } = {}) {
  const server = fakeServer();
  const loads = { count: 0, fail: 0 }; // document loads asked for; how many of the next ones fail
  document.body.innerHTML = '<div data-editor-canvas data-edit-url="/edit/"></div>';
  globalThis.fetch = async (url, init) => {
    const body = JSON.parse(init.body);
    const { status, data } = await server.apply(body.ops, body.revision);
    return new Response(JSON.stringify(data), { status, headers: { "Content-Type": "application/json" } });
  };
  const published = [];
  const notices = [];
  const events = [];
  const store = createEditorStore({
    canEdit,
    sendOps,
    discardQueued,
    fetchDocument: async () => {
      loads.count += 1;
      if (loads.fail) {
        loads.fail -= 1;
        throw new TypeError("Failed to fetch");
      }
      return { status: 200, data: { ...server.documentAnswer(), diagnostics: [] } };
    },
    fetchAnalysis: async () => ({ status: 200, data: { labels: {}, diagnostics: [] } }),
    publish: (revision, state) => published.push([revision, state]),
    notice: (message, kind, action) => notices.push(action ? { message, kind, action } : { message, kind }),
    emit: (name, detail) => events.push([name, detail]),
  });
  return { server, store, published, notices, events, loads };
}

const add = (id) => [{ op: "add_node", id }];
const sizes = (store) => [store.getState().history.undo.length, store.getState().history.redo.length];
const nodeIds = (store) => store.getState().doc.nodes.map((node) => node.id);
const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("the editor store", () => {
  let t;
  beforeEach(async () => {
    t = setUp();
    await t.store.getState().load();
  });
  afterEach(() => {
    // Never leave the module's one queue waiting on a held answer.
    t.server.hold = false;
    t.server.release();
  });

  it("loads the document and publishes its revision", () => {
    expect(t.store.getState().status).toEqual({ state: "saved", revision: 1 });
    expect(t.published.at(-1)).toEqual([1, "saved"]);
    expect(t.store.getState().fitted).toBe(true); // an empty graph keeps its viewport
  });

  it("applies a save's patch to the document it holds, keeping the analysis the patch leaves out", async () => {
    const { store, server } = t;
    const analysis = store.getState().analysis;
    server.nodes = ["a"];
    server.revision = 2;
    server.answer = { status: 200, data: { revision: 2, base_revision: 1, undo: [{ op: "remove_nodes", ids: ["a"] }],
      patch: [{ op: "add", path: "/nodes/0", value: { id: "a" } }] } };
    await store.getState().send(add("a"));
    expect(nodeIds(store)).toEqual(["a"]);
    expect(store.getState().analysis).toBe(analysis);
    expect(store.getState().status).toEqual({ state: "saved", revision: 2 });
    expect(sizes(store)).toEqual([1, 0]);
  });

  it("loads the whole document when a patch answers a revision it does not hold", async () => {
    const { store, server } = t;
    server.nodes = ["a", "b"];
    server.revision = 7;
    server.answer = { status: 200, data: { revision: 7, base_revision: 6, undo: [],
      patch: [{ op: "add", path: "/nodes/0", value: { id: "b" } }] } };
    await store.getState().send(add("b"));
    expect(nodeIds(store)).toEqual(["a", "b"]);
    expect(store.getState().status.revision).toBe(7);
  });

  it("undoes and redoes an edit by sending the server's undo operations", async () => {
    const { store, server } = t;
    await store.getState().send(add("a"));
    await store.getState().send(add("b"));
    expect(nodeIds(store)).toEqual(["a", "b"]);
    expect(sizes(store)).toEqual([2, 0]);

    await store.getState().undo();
    expect(server.received.at(-1)).toEqual([{ op: "remove_nodes", ids: ["b"] }]);
    expect(nodeIds(store)).toEqual(["a"]);
    expect(sizes(store)).toEqual([1, 1]);

    await store.getState().redo();
    expect(server.received.at(-1)).toEqual([{ op: "add_node", id: "b" }]);
    expect(nodeIds(store)).toEqual(["a", "b"]);
    expect(sizes(store)).toEqual([2, 0]);
    expect(store.getState().status).toEqual({ state: "saved", revision: 5 });
  });

  it("drops the redo stack when a new edit is made, and does nothing with empty stacks", async () => {
    const { store, server } = t;
    await store.getState().send(add("a"));
    await store.getState().undo();
    expect(sizes(store)).toEqual([0, 1]);
    await store.getState().send(add("c"));
    expect(sizes(store)).toEqual([1, 0]);
    const sent = server.received.length;
    await store.getState().redo();
    await store.getState().undo();
    await store.getState().undo();
    expect(server.received.length).toBe(sent + 1);
    expect(sizes(store)).toEqual([0, 1]);
  });

  it(`keeps the last ${HISTORY_LIMIT} edits`, async () => {
    const { store } = t;
    for (let i = 0; i <= HISTORY_LIMIT; i += 1) await store.getState().send(add(`n${i}`));
    expect(sizes(store)).toEqual([HISTORY_LIMIT, 0]);
    expect(store.getState().history.undo[0]).toEqual([{ op: "remove_nodes", ids: ["n1"] }]);
  });

  it("stays 'saving' until every queued edit is answered, and sends them in order", async () => {
    const { store, server } = t;
    server.hold = true;
    const first = store.getState().send(add("a"));
    const second = store.getState().send(add("b"));
    expect(store.getState().status.state).toBe("saving");
    await tick();
    expect(server.received).toEqual([add("a")]); // the second waits for the first's answer
    server.release();
    await first;
    expect(store.getState().status.state).toBe("saving");
    await tick();
    server.release();
    await second;
    expect(store.getState().status).toEqual({ state: "saved", revision: 3 });
    expect(server.received).toEqual([add("a"), add("b")]);
  });

  it("undo queued behind an edit is sent after it, with the history in step", async () => {
    const { store, server } = t;
    await store.getState().send(add("a"));
    server.hold = true;
    const edit = store.getState().send(add("b"));
    const undone = store.getState().undo(); // undoes "a": "b" has not been answered yet
    expect(sizes(store)).toEqual([0, 0]);
    await tick();
    server.release();
    await edit;
    await tick();
    server.release();
    await undone;
    expect(server.received.slice(-2)).toEqual([add("b"), [{ op: "remove_nodes", ids: ["a"] }]]);
    expect(nodeIds(store)).toEqual(["b"]);
    expect(sizes(store)).toEqual([1, 1]);
  });

  it("on a conflict shows the kept document, keeps the history, offers 'apply mine' and sends what was queued",
    async () => {
      const { store, server, notices, events } = t;
      await store.getState().send(add("a"));
      server.hold = true;
      const refused = store.getState().send(add("b"));
      const queued = store.getState().send(add("c"));
      await tick();
      server.nodes = ["a", "theirs"];
      server.revision = 9;
      server.answer = {
        status: 409,
        data: { code: "edit.conflict", message: "Ada changed node b first (revision 9)", current_revision: 9,
                ops: add("b") },
      };
      server.hold = false;
      server.release();
      await expect(refused).resolves.toBeNull();
      await expect(queued).resolves.not.toBeNull();
      // "c" went out after the refusal, on the revision it was made on (the server rebases it).
      expect(server.received).toEqual([add("a"), add("b"), add("c")]);
      expect(server.revisions.at(-1)).toBe(2);
      expect(nodeIds(store)).toEqual(["a", "theirs", "c"]);
      expect(sizes(store)).toEqual([2, 0]); // a and c: your own edits stay undoable
      expect(store.getState().status).toEqual({ state: "saved", revision: 10 });
      const conflict = notices.find((n) => n.kind === "conflict");
      expect(conflict.action).toEqual({ ops: add("b"), label: "Apply mine instead" });
      expect(events.some(([name]) => name === "documentReloaded")).toBe(true);
    });

  it("shows another tab's change once, and never an older document over a newer one", async () => {
    const { store, server } = t;
    await store.getState().send(add("a"));
    server.nodes = ["a", "theirs"];
    server.revision = 3;
    await store.getState().remoteChanged(3);
    expect(nodeIds(store)).toEqual(["a", "theirs"]);
    expect(store.getState().status.revision).toBe(3);
    await expect(store.getState().remoteChanged(3)).resolves.toBeNull(); // already shown: nothing loaded
    server.revision = 2; // an answer that crossed a newer one
    server.nodes = ["a"];
    await store.getState().load();
    expect(nodeIds(store)).toEqual(["a", "theirs"]);
    expect(store.getState().status.revision).toBe(3);
  });

  // The interleaving that left a screen at the newest revision without another person's change (issue 34): an
  // edit sent on revision 2 is in flight when the live feed says someone else saved 3; the server rebases the
  // edit onto 3 and answers with a patch from 3. The patch is applied only to the document at 3, never to the
  // one shown (2), and the revision moves only with the document it belongs to.
  it("applies a save's patch only to the revision it was made on, and catches up with the feed after", async () => {
    const { store, server, loads } = t;
    server.nodes = ["a", "b", "c"];
    server.revision = 2;
    await store.getState().load();
    server.hold = true;
    const mine = store.getState().send([{ op: "remove_nodes", ids: ["c"] }]);
    await tick();
    // Someone else deletes b (revision 3); the feed tells this tab while its own edit is unanswered.
    server.nodes = ["a", "c"];
    server.revision = 3;
    const loadsBefore = loads.count;
    await expect(store.getState().remoteChanged(3)).resolves.toBeNull(); // the edit's answer brings it
    expect(store.getState().status.revision).toBe(2);
    expect(nodeIds(store)).toEqual(["a", "b", "c"]);
    // Rebased onto 3 and saved as 4: the patch is from revision 3 ([a, c]): on the 2 shown it would remove b.
    server.nodes = ["a"];
    server.revision = 4;
    server.answer = { status: 200, data: { revision: 4, base_revision: 3, undo: [],
      patch: [{ op: "remove", path: "/nodes/1" }] } };
    server.hold = false;
    server.release();
    await mine;
    expect(loads.count).toBe(loadsBefore + 1); // refused, and the draft loaded whole instead
    expect(nodeIds(store)).toEqual(["a"]);
    expect(store.getState().status).toEqual({ state: "saved", revision: 4 });
    expect(t.published.every(([revision], i) => i === 0 || revision >= t.published[i - 1][0])).toBe(true);
  });

  it("applies a patch made on the revision shown, and sends an edit on the revision it was made on", async () => {
    const { store, server, loads } = t;
    server.nodes = ["a", "b"];
    server.revision = 3;
    await store.getState().remoteChanged(3);
    const loadsBefore = loads.count;
    server.nodes = ["a"];
    server.revision = 4;
    server.answer = { status: 200, data: { revision: 4, base_revision: 3, undo: [],
      patch: [{ op: "remove", path: "/nodes/1" }] } };
    await store.getState().send([{ op: "remove_nodes", ids: ["b"] }]);
    expect(loads.count).toBe(loadsBefore);
    expect(nodeIds(store)).toEqual(["a"]);
    expect(store.getState().status.revision).toBe(4);
    // Two edits made on revision 4 before either is answered both go out on 4 (the server rebases the second
    // past the first, which is this tab's own).
    server.hold = true;
    const first = store.getState().send(add("x"));
    const second = store.getState().send(add("y"));
    await tick();
    server.hold = false;
    server.release();
    await Promise.all([first, second]);
    expect(server.revisions.slice(-2)).toEqual([4, 4]);
    expect(nodeIds(store)).toEqual(["a", "x", "y"]);
  });

  it("shows the diagnostics panel an answer carries; a draft loaded instead asks the panels for theirs", async () => {
    const { store, server, events } = t;
    server.nodes = ["a"];
    server.revision = 2;
    server.answer = { status: 200, data: { revision: 2, base_revision: 1, undo: [], diagnostics: [],
      patch: [{ op: "add", path: "/nodes/0", value: { id: "a" } }], diagnostics_panel: "<p>1 error</p>" } };
    await store.getState().send(add("a"));
    expect(events).toContainEqual(["diagnostics", { html: "<p>1 error</p>" }]);
    expect(events.some(([name]) => name === "documentLoaded")).toBe(false);
    // A patch on a revision not shown: the draft is loaded whole, and its panel is not the answer's.
    events.length = 0;
    server.nodes = ["a", "b"];
    server.revision = 9;
    server.answer = { status: 200, data: { revision: 9, base_revision: 8, undo: [], diagnostics: [],
      patch: [{ op: "add", path: "/nodes/1", value: { id: "b" } }], diagnostics_panel: "<p>stale</p>" } };
    await store.getState().send(add("b"));
    expect(events.map(([name]) => name)).toEqual(["documentLoaded", "documentSaved"]);
  });

  it("a draft that could not be loaded is loaded at the feed's next word; a whole answer older than the shown is not shown",
    async () => {
      const { store, server, loads } = t;
      server.nodes = ["theirs"];
      server.revision = 5;
      loads.fail = 1;
      await expect(store.getState().remoteChanged(5)).resolves.toBeNull(); // the network failed: nothing shown
      expect(store.getState().status.revision).toBe(1);
      await store.getState().remoteChanged(5); // the feed's next answer names the same revision
      expect(nodeIds(store)).toEqual(["theirs"]);
      expect(store.getState().status.revision).toBe(5);
      // This tab's edit answered with the whole document of revision 4 after revision 5 was shown: kept at 5.
      server.answer = { status: 200, data: { revision: 4, document: { nodes: [], routes: [] }, undo: [] } };
      await store.getState().send(add("late"));
      expect(nodeIds(store)).toEqual(["theirs"]);
      expect(store.getState().status).toEqual({ state: "saved", revision: 5 });
    });

  it("when the server cannot be reached keeps the history and shows the error state", async () => {
    const { store, server, notices } = t;
    await store.getState().send(add("a"));
    server.answer = new Error("offline");
    await expect(store.getState().send(add("b"))).resolves.toBeNull();
    expect(store.getState().status).toEqual({ state: "error", revision: 2 });
    expect(sizes(store)).toEqual([1, 0]);
    expect(notices.at(-1)).toEqual({ message: "The server could not be reached; the change was not saved.", kind: "error" });
  });

  it("a refused edit reloads the document and records nothing", async () => {
    const { store, server, notices } = t;
    server.answer = { status: 400, data: { message: "no such task" } };
    await store.getState().send(add("x"));
    expect(notices.at(-1)).toEqual({ message: "no such task", kind: "error" });
    expect(sizes(store)).toEqual([0, 0]);
    expect(store.getState().status).toEqual({ state: "saved", revision: 1 });
  });

  it("a panel's edit joins the undo history and selects its node once", async () => {
    const { store, server } = t;
    server.nodes = ["renamed"];
    server.revision = 2;
    await store.getState().panelChanged({ nodeId: "renamed", undo: [{ op: "rename", id: "renamed" }] });
    expect(sizes(store)).toEqual([1, 0]);
    expect(store.getState().selectionChanged("renamed")).toBe(false); // already announced by the panel
    const doc = store.getState().doc;
    expect(store.getState().takePendingSelect(doc)).toBe("renamed");
    expect(store.getState().takePendingSelect(doc)).toBeNull();
    await store.getState().undo();
    expect(server.received.at(-1)).toEqual([{ op: "rename", id: "renamed" }]);
  });

  it("a node picked while a panel's edit loads stays selected when the edit's drawing lands", async () => {
    const { store, server } = t;
    server.nodes = ["orders", "set_value"];
    server.revision = 2;
    const saved = store.getState().panelChanged({ nodeId: "orders" });
    expect(store.getState().selectionChanged("set_value")).toBe(true); // picked before the draft came back
    await saved;
    expect(store.getState().takePendingSelect(store.getState().doc)).toBeNull();
  });

  it("a selection cleared while a panel's edit loads stays cleared when the edit's drawing lands", async () => {
    const { store, server } = t;
    server.nodes = ["template"];
    server.revision = 2;
    const saved = store.getState().panelChanged({ nodeId: "template" });
    expect(store.getState().selectionChanged(null)).toBe(true); // the empty canvas clicked before the draft came back
    await saved;
    expect(store.getState().takePendingSelect(store.getState().doc)).toBeNull();
  });

  it("selects the node an edit added and tells the panels", async () => {
    const { store, events } = t;
    t.server.answer = {
      status: 200,
      data: { document: { nodes: [{ id: "task_1" }], routes: [] }, revision: 2, undo: [], select: "task_1" },
    };
    await store.getState().send(add("task_1"), { selectField: "over" });
    expect(events).toContainEqual(["select", { nodeId: "task_1", field: "over" }]);
    expect(events.at(-1)).toEqual(["documentSaved", { revision: 2 }]);
    expect(sizes(store)).toEqual([0, 0]); // nothing to undo in the answer: the history is unchanged
  });

  it("tells the panels of an edit that changes what they show, and not of one that only moved nodes", async () => {
    const { store, events } = t;
    await store.getState().send([{ op: "move_nodes", positions: { a: { x: 1, y: 2 } } }]);
    expect(events.at(-1)).toEqual(["layoutSaved", { revision: 2 }]);
    await store.getState().send([{ op: "move_nodes", positions: {} }, ...add("b")]);
    expect(events.at(-1)).toEqual(["documentSaved", { revision: 3 }]);
  });

  it("sends nothing from a read-only editor", async () => {
    const readOnly = setUp({ canEdit: false });
    await readOnly.store.getState().load();
    await expect(readOnly.store.getState().send(add("a"))).resolves.toBeNull();
    expect(readOnly.server.received).toEqual([]);
  });
});
