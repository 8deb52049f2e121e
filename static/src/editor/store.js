// The editor's store (zustand, as React Flow itself uses): the document as the
// server last answered it, what the server says about it (analysis,
// diagnostics), the save state shown in the toolbar, and the undo/redo stacks.
//
// The server owns the document: every edit is a list of named operations sent
// through the tab's one edit queue (queue.js). The answer carries the
// operations that undo the edit; undo sends those, redo sends the undo's own
// undo. Panel edits arrive with their undo too, so Ctrl+Z covers both.
//
// Everything outside the store is passed in (`deps`), so tests drive it with a
// fake server through the real queue: sendOps/discardQueued (queue.js),
// fetchDocument/fetchAnalysis (HTTP), publish (the page's revision and save
// state), notice and emit (events.js).
import { createStore } from "zustand/vanilla";

import { applyPatch } from "./patch.js";

export const HISTORY_LIMIT = 100;

const EMPTY_HISTORY = { undo: [], redo: [] };

export function createEditorStore(deps) {
  const { canEdit, sendOps, discardQueued, fetchDocument, fetchAnalysis, publish, notice, emit } = deps;
  // Not drawn, so not state: how many edits are unanswered, which analysis
  // answer is the newest asked for, and the node to select once it is drawn.
  let inFlight = 0;
  let analysisTicket = 0;
  let pendingSelect = null;
  let lastSelected = null;
  // The newest revision the server has named (a save's answer, the live feed): the draft shown catches up to it.
  let heard = null;
  // The document load in flight, and one asked for while it was (it runs after it).
  let loading = null;
  let again = null;

  return createStore((set, get) => {
    // `status.revision` is the revision of `doc`, and this is the one place either changes: always together.
    const advance = (doc, revision, changes, state) => {
      set({ ...changes, doc, status: { state, revision } });
      publish(revision, state);
    };

    // The save state shown in the toolbar; never the revision.
    const showState = (state) => {
      const revision = get().status.revision;
      set({ status: { state, revision } });
      publish(revision, state);
    };

    const hear = (revision) => {
      if (typeof revision === "number" && (heard == null || revision > heard)) heard = revision;
    };

    // Regions, reachability and labels for every node in one call; an older answer never overwrites a newer one.
    const refreshAnalysis = async () => {
      const ticket = ++analysisTicket;
      const { status: code, data } = await fetchAnalysis();
      if (ticket !== analysisTicket || code !== 200) return;
      set(data.diagnostics ? { analysis: data, diagnostics: data.diagnostics } : { analysis: data });
    };

    // A whole document from the server. Answers may cross (another person's change loaded while this tab's own
    // edit was answered): the server's revisions only grow, so an older document than the one shown is never
    // shown again.
    const adopt = (data, { revision = data.revision, diagnostics = data.diagnostics, state = "saved" } = {}) => {
      hear(revision);
      const shown = get().status.revision;
      if (shown != null && revision != null && revision < shown) {
        showState(state);
        return;
      }
      const changes = diagnostics ? { diagnostics } : {};
      if (data.analysis) {
        analysisTicket += 1;
        changes.analysis = data.analysis;
      }
      advance(data.document, revision, changes, state);
      if (!data.analysis) refreshAnalysis();
    };

    // A save's answer (queue.js asks for "patch"): a patch from the document at `base_revision` (the revision
    // the server applied the edit to: the one it was sent with, or a newer one when others saved meanwhile), or
    // the whole document when that is smaller; the analysis and diagnostics come only when they changed. A patch
    // applies only to the document at its base: for any other one it is refused (false) and the caller loads
    // the document whole.
    const applyChanges = (data, state) => {
      hear(data.revision);
      const shown = get().status.revision;
      if (shown != null && data.revision <= shown) {
        showState(state); // a load already brought this revision, or a newer one
        return true;
      }
      let doc = data.document;
      if (!doc) {
        if (!data.patch || shown !== data.base_revision || !get().doc) return false;
        try {
          doc = applyPatch(get().doc, data.patch);
        } catch {
          return false;
        }
      }
      const changes = {};
      if (data.diagnostics) changes.diagnostics = data.diagnostics;
      if (data.analysis) {
        analysisTicket += 1;
        changes.analysis = data.analysis;
      }
      advance(doc, data.revision, changes, state);
      return true;
    };

    const fetchAndAdopt = async () => {
      let answer;
      try {
        answer = await fetchDocument();
      } catch {
        return null; // the live feed's next answer asks again
      }
      const { status: code, data } = answer;
      if (code !== 200) {
        notice(data && data.message ? data.message : `Could not load the workflow (HTTP ${code}).`, "error");
        return null;
      }
      // Fit once, to the graph as loaded; an empty canvas keeps its viewport so nodes land where they are dropped.
      if (!data.document.nodes.length) set({ fitted: true });
      adopt(data, { state: inFlight ? "saving" : "saved" });
      return data;
    };

    // One load at a time; one asked for while another is in flight runs after it (the one in flight may have
    // been read before the change it is asked for).
    const load = () => {
      if (!loading) {
        loading = fetchAndAdopt().finally(() => {
          loading = null;
        });
        return loading;
      }
      if (!again) {
        again = loading.then(() => {
          again = null;
          return load();
        });
      }
      return again;
    };

    // Shows the newest revision heard of, once nothing of this tab's is unanswered (its answer brings it).
    // Resolves with the loaded answer, or null when the draft shown is already that new.
    const catchUp = async () => {
      if (loading) await loading;
      const shown = get().status.revision;
      if (inFlight || heard == null || (shown != null && heard <= shown)) return null;
      return loadedElsewhere();
    };

    // A draft this tab did not edit itself was loaded (another person's change, a patch it could not apply):
    // the panels that show the draft ask for theirs.
    const loadedElsewhere = async () => {
      const data = await load();
      if (data) emit("documentLoaded", { revision: get().status.revision });
      return data;
    };

    const pushUndo = (history, ops) => {
      const undo = [...history.undo, ops];
      if (undo.length > HISTORY_LIMIT) undo.shift();
      return { undo, redo: [] };
    };

    // ``record`` says which stack takes the answer's undo: "undo" for a new edit
    // (clearing redo), "redo" when undoing, "undo-keep" when redoing.
    const record = (kind, ops) => {
      const history = get().history;
      if (kind === "undo") set({ history: pushUndo(history, ops) });
      else if (kind === "redo") set({ history: { ...history, redo: [...history.redo, ops] } });
      else if (kind === "undo-keep") set({ history: { ...history, undo: [...history.undo, ops] } });
    };

    // Sends one edit (a list of operations) through the tab's queue, on the revision shown now (the one the
    // person made it on: the server rebases it past edits saved since that touch other things); resolves with
    // the server's answer when it was stored, null otherwise (refused, skipped after a conflict, or not sent).
    const send = async (ops, options = {}) => {
      if (!canEdit || !ops.length) return null;
      inFlight += 1;
      showState("saving");
      let answer;
      try {
        answer = await sendOps(ops, get().status.revision);
      } catch {
        inFlight -= 1;
        discardQueued();
        notice("The server could not be reached; the change was not saved.", "error");
        showState("error");
        return null;
      }
      try {
        return await answered(answer, ops, options);
      } finally {
        if (inFlight === 0) catchUp();
      }
    };

    const answered = async (answer, ops, { record: kind = "undo", selectField = null }) => {
      inFlight -= 1;
      const settled = inFlight === 0 ? "saved" : "saving";
      if (answer.skipped) {
        showState(settled);
        return null;
      }
      const { status: code, data } = answer;
      if (code === 200) {
        if (data.undo && data.undo.length) record(kind, data.undo);
        if (data.select) {
          // Shown selected at once; the inspector is asked for it now that the node is stored.
          pendingSelect = data.select;
          lastSelected = data.select;
        }
        if (!applyChanges(data, settled)) await loadedElsewhere();
        else if (data.diagnostics_panel && get().status.revision === data.revision) {
          // The diagnostics panel as the server draws it for this revision: shown from the answer.
          emit("diagnostics", { html: data.diagnostics_panel });
        }
        if (data.select) emit("select", { nodeId: data.select, field: selectField });
        // No panel shows where nodes stand: a move (a drag, a layout) reloads none of them, which after every
        // drag cost the inspector's and the run panel's requests for nothing.
        const layoutOnly = ops.every((op) => op.op === "move_nodes");
        emit(layoutOnly ? "layoutSaved" : "documentSaved", { revision: data.revision });
        return data;
      }
      if (code === 409 && data && data.code === "edit.conflict") {
        // Someone changed the same field first: theirs is kept and shown; one click sends ours again, on it.
        notice(`${data.message}.`, "conflict", { ops: data.ops, label: "Apply mine instead" });
        hear(data.current_revision);
        await load();
        emit("documentReloaded", { revision: get().status.revision });
        return null;
      }
      if (code === 409) {
        // Not a rebase refused for one field: the log does not reach back (or a whole document was saved), so
        // what is queued behind it was made on a draft that is gone.
        discardQueued();
        set({ history: EMPTY_HISTORY });
        adopt({ document: data.document, revision: data.current_revision, diagnostics: null }, { state: settled });
        notice(
          `Someone else saved this workflow (now revision ${data.current_revision}). ` +
            "The canvas shows their version; your last change was not applied.",
          "conflict",
        );
        emit("documentReloaded", { revision: data.current_revision });
        return null;
      }
      if (code === 403) notice("You can view this workflow but not change it.", "error");
      else notice((data && data.message) || `The change could not be saved (HTTP ${code}).`, "error");
      await load();
      emit("documentReloaded", { revision: get().status.revision });
      return null;
    };

    const step = (from, kind) => {
      const history = get().history;
      if (!history[from].length) return null;
      const ops = history[from][history[from].length - 1];
      set({ history: { ...history, [from]: history[from].slice(0, -1) } });
      return send(ops, { record: kind });
    };

    return {
      doc: null,
      analysis: null,
      diagnostics: [],
      status: { state: "loading", revision: null },
      history: EMPTY_HISTORY,
      fitted: false,

      load,
      send,
      // The live feed names the draft's newest revision: show it, unless it is shown (or this tab's own
      // unanswered edit will bring it). Resolves with the loaded answer, or null when nothing was loaded.
      remoteChanged: (revision) => {
        hear(revision);
        return catchUp();
      },
      undo: () => step("undo", "redo"),
      redo: () => step("redo", "undo-keep"),

      // A panel changed the document (its undo, if any, joins the history) and already shows `nodeId`.
      panelChanged: ({ nodeId = null, undo = null } = {}) => {
        if (nodeId) {
          pendingSelect = nodeId;
          lastSelected = nodeId;
        }
        if (undo && undo.length) set({ history: pushUndo(get().history, undo) });
        return load();
      },
      markFitted: () => set({ fitted: true }),

      // The node to show selected in the next drawing of `doc`, once (a node an edit just added or renamed).
      takePendingSelect: (doc) => {
        if (!pendingSelect || !doc.nodes.some((node) => node.id === pendingSelect)) return null;
        const id = pendingSelect;
        pendingSelect = null;
        return id;
      },
      // Records the selected node; true when it differs from the last one announced to the panels.
      selectionChanged: (nodeId) => {
        // A node picked, or the selection cleared, since an edit asked for its own wins: the edit's drawing,
        // landing later, must not move the selection back (Delete would then remove a node the inspector does
        // not show, and a click on the empty canvas would be undone under the workflow's settings).
        if (nodeId !== pendingSelect) pendingSelect = null;
        if (nodeId === lastSelected) return false;
        lastSelected = nodeId;
        return true;
      },
    };
  });
}
