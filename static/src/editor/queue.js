// The tab's one edit queue. Every change to the document, from the canvas
// or from a side panel's form, is a list of named edit operations sent to the
// editor's one write endpoint, one request at a time, each with the revision
// the previous one produced: a tab therefore never conflicts with itself, and
// only another person's save can make the revision stale. The server then
// rebases the edit onto the newer draft (server order) and refuses it (409)
// only when it wants a field someone else changed since: the edits queued
// behind it are still sent, each on the revision the server last named.
import { request } from "./api.js";
import { clientId } from "./live.js";

let tail = Promise.resolve();
let revision = null;
let generation = 0;

export function currentRevision() {
  return revision;
}

export function setRevision(value) {
  if (value == null) return;
  revision = Number(value);
  // Panels not refreshed since (a schema builder with unsaved changes) send the page's revision field.
  const field = document.getElementById("editor-revision");
  if (field) field.value = String(revision);
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
  const root = document.querySelector("[data-editor-canvas]");
  return root ? root.dataset.editUrl : null;
}

// Sends operations through the queue; resolves with {status, data} as the server answered. A saved edit is
// answered with what changed since the revision sent ("answer": "patch", designer/editor/edits.py patch_json).
export function sendOps(ops) {
  return enqueue(async () => {
    const answer = await request("POST", editUrl(), { revision, ops, answer: "patch", client: clientId() });
    if (answer.status === 200) setRevision(answer.data.revision);
    else if (answer.status === 409) setRevision(answer.data.current_revision);
    return answer;
  });
}
