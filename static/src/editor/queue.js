// The tab's one edit queue. Every change to the document, from the canvas
// or from a side panel's form, is a list of named edit operations sent to the
// editor's one write endpoint, one request at a time, each with the revision
// it was made on. That revision is the store's (store.js): the queue keeps
// none of its own. The server rebases an edit made on an older revision onto
// the newer draft (server order; this tab's own earlier edits never count
// against it) and refuses it (409) only when it wants a field someone else
// changed since: the edits queued behind it are still sent.
import { request } from "./api.js";
import { clientId } from "./live.js";

let tail = Promise.resolve();
let generation = 0;
let revisionSource = () => null;

// Where the page's revision is read from: the editor's store, once it exists.
export function readRevisionFrom(source) {
  revisionSource = source;
}

// The revision the draft shown is at (the one a panel's edit is made on).
export function currentRevision() {
  const value = revisionSource();
  return value == null ? null : Number(value);
}

// A conflict or a reload: whatever is still queued was decided on a stale document.
export function discardQueued() {
  generation += 1;
}

// Runs task() after every earlier edit has been answered; resolves with its result,
// or with {skipped: true} if a conflict discarded it meanwhile.
export function enqueue(task) {
  const ticket = generation;
  const run = tail.then(() => (ticket === generation ? task() : { skipped: true }));
  tail = run.catch(() => undefined);
  return run;
}

export function editUrl() {
  const root = /** @type {HTMLElement | null} */ (document.querySelector("[data-editor-canvas]"));
  return root ? root.dataset.editUrl : null;
}

// Sends operations made on `revision` through the queue; resolves with {status, data} as the server answered.
// A saved edit is answered with what changed since the revision it was applied to ("answer": "patch",
// designer/editor/edits.py patch_json).
export function sendOps(ops, revision) {
  return enqueue(() => request("POST", editUrl(), { revision, ops, answer: "patch", client: clientId() }));
}
