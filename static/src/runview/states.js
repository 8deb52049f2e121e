// What the run page's canvas says about a node in words (never colour alone), and where its executions are.
// Every number comes from the server's answer (/runs/<id>/graph/); this file only phrases it.

export const STATES = ["queued", "running", "waiting", "interrupted", "completed", "failed", "cancelled", "not reached"];

// "not reached" as a CSS class and a data attribute.
export function stateClass(state) {
  return STATES.includes(state) ? state.replace(" ", "-") : "not-reached";
}

// A foreach: done / failed / running / total of its items (all its activations in the scope shown).
// Any other node: how many of its executions completed and failed, and how many run now.
export function countsText(kind, entry, loop) {
  if (kind === "foreach") {
    if (!loop) return "";
    const total = loop.total == null ? "?" : loop.total;
    return `${loop.done} done · ${loop.failed} failed · ${loop.running} running / ${total}`;
  }
  if (!entry || !(entry.started || entry.completed || entry.failed)) return "";
  const parts = [`${entry.completed} done`];
  if (entry.failed) parts.push(`${entry.failed} failed`);
  if (entry.running) parts.push(`${entry.running} running`);
  return parts.join(" · ");
}

// The executions panel's URL for one node (the server's template, its node slot filled in), in the scope shown.
export function executionsUrl(template, slot, nodeId, scopeKey) {
  const url = template.replace(slot, encodeURIComponent(nodeId));
  return scopeKey ? `${url}?${new URLSearchParams({ scope: scopeKey })}` : url;
}

// Which of a subgraph node's calls to open first: a failed one (that is what a person looks for), else one
// under way, else the first.
export function firstCall(calls) {
  if (!calls || !calls.length) return null;
  return (
    calls.find((call) => call.state === "failed") ||
    calls.find((call) => ["running", "waiting", "interrupted"].includes(call.state)) ||
    calls[0]
  );
}
