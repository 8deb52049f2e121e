// Live co-editing, the browser's side: follows the draft's operation log
// (designer/editor/live.py) and shows who else has the draft open.
//
// The feed is a long-poll: GET <live-url>?after=<revision> answers when a
// change after that revision was saved (by anyone, in server order), when
// someone arrives, leaves or selects another node, or when a version is
// published; otherwise after a wait. Another tab's change makes the canvas
// load the stored draft (the server applied it, analysed it once, and answers
// the document as it now is); this tab's own changes come with their answers.
// A dropped connection asks again, with backoff, from the last revision seen,
// so nothing is missed and nothing applied twice.
import { csrfToken, request } from "./api.js";

function randomId() {
  const bytes = new Uint8Array(12);
  window.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

let tabId = null;

// This tab's id: the server logs it with each change the tab sends, so the tab knows its own changes.
export function clientId() {
  if (!tabId) tabId = randomId();
  return tabId;
}

// The people to show: every tab but this one, one entry per person (their latest selection first found).
export function others(presence, client) {
  const byUser = new Map();
  for (const tab of presence) {
    if (tab.client === client) continue;
    const seen = byUser.get(tab.user);
    if (!seen || (!seen.node && tab.node)) byUser.set(tab.user, tab);
  }
  return [...byUser.values()];
}

function badge(person) {
  const item = document.createElement("span");
  item.className = "presence-badge";
  item.style.background = person.colour;
  item.textContent = person.initials;
  item.title = person.name;
  return item;
}

function drawList(list, people) {
  list.replaceChildren(
    ...people.map((person) => {
      const item = document.createElement("li");
      const mark = badge(person);
      mark.setAttribute("aria-hidden", "true");
      const name = document.createElement("span");
      name.className = "visually-hidden";
      name.textContent = person.node ? `${person.name}, on ${person.node}` : person.name;
      item.append(mark, name);
      return item;
    }),
  );
  list.hidden = people.length === 0;
}

// Initials on the nodes others have selected. The badges live in React Flow's node wrappers, outside
// React's own children, so they are put back whenever the drawn nodes change.
function drawOnNodes(root, people) {
  for (const old of root.querySelectorAll(".presence-badges")) old.remove();
  const byNode = new Map();
  for (const person of people) {
    if (!person.node) continue;
    byNode.set(person.node, [...(byNode.get(person.node) || []), person]);
  }
  for (const [nodeId, here] of byNode) {
    const wrapper = root.querySelector(`.react-flow__node[data-id="${CSS.escape(nodeId)}"]`);
    if (!wrapper) continue;
    const box = document.createElement("span");
    box.className = "presence-badges";
    box.setAttribute("role", "img");
    box.setAttribute("aria-label", `Selected by ${here.map((p) => p.name).join(", ")}`);
    box.append(...here.map(badge));
    wrapper.append(box);
  }
}

function sleep(ms) {
  return new Promise((resolve) => window.setTimeout(resolve, ms));
}

// Starts following the draft; returns a function that stops it. `store` is the editor's store (its status
// revision is what the canvas shows; `remoteChanged()` loads the stored draft), `notice` shows a message.
export function startLive({ root, store, notice, emit }) {
  const liveUrl = root.dataset.liveUrl;
  const presenceUrl = root.dataset.presenceUrl;
  if (!liveUrl) return () => {};
  const client = clientId();
  const list = document.getElementById("editor-presence");
  let stopped = false;
  let people = [];
  let selected = null;
  let seen = null; // the last revision the feed answered: the next ask starts after it
  let presenceToken = "";
  let version = null;
  let heartbeat = null;

  const announce = (extra = {}) =>
    request("POST", presenceUrl, { client, node: selected, ...extra }).catch(() => undefined);

  const redraw = () => {
    if (list) drawList(list, people);
    drawOnNodes(root, people);
  };
  const onSelect = (event) => {
    const nodeId = (event.detail && event.detail.nodeId) || null;
    if (nodeId === selected) return;
    selected = nodeId;
    announce();
  };
  document.addEventListener("trellis:select", onSelect);
  const nodesObserver = new MutationObserver(() => {
    // A re-drawn node lost its badges; put them back (our own insertions trigger nothing: childList of the
    // nodes layer only).
    if (people.some((p) => p.node)) drawOnNodes(root, people);
  });
  const watchNodes = () => {
    const layer = root.querySelector(".react-flow__nodes");
    if (layer) nodesObserver.observe(layer, { childList: true });
    else if (!stopped) window.setTimeout(watchNodes, 200);
  };
  watchNodes();
  // keepalive: the request outlives the page being left.
  const onLeave = () => {
    fetch(presenceUrl, {
      method: "POST",
      keepalive: true,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify({ client, leave: true }),
    }).catch(() => undefined);
  };
  window.addEventListener("pagehide", onLeave);

  const follow = async () => {
    let failures = 0;
    announce();
    heartbeat = window.setInterval(() => announce(), 10000);
    while (!stopped) {
      const shown = store.getState().status.revision;
      if (seen == null) {
        if (shown == null) {
          await sleep(100);
          continue;
        }
        seen = shown;
      }
      const params = new URLSearchParams({ after: String(seen), presence: presenceToken });
      if (version != null) params.set("version", String(version));
      let answer;
      try {
        answer = await request("GET", `${liveUrl}?${params}`);
      } catch {
        answer = null;
      }
      if (stopped) return;
      if (!answer || answer.status !== 200) {
        failures += 1;
        root.dataset.live = "offline";
        await sleep(Math.min(2000, 125 * 2 ** failures)); // back within 2 s of the network's return
        continue;
      }
      if (failures) announce(); // back after a drop: say we are still here
      failures = 0;
      root.dataset.live = "online";
      const data = answer.data;
      // The store decides: it loads the draft when this is newer than what it shows and no edit of this tab
      // is unanswered (that answer brings it; the store looks again once it is in).
      if (await store.getState().remoteChanged(data.revision)) {
        emit("documentSaved", { revision: store.getState().status.revision, remote: true });
      }
      seen = Math.max(seen, data.revision);
      root.dataset.seen = String(seen);
      presenceToken = data.presence_token;
      people = others(data.presence, client);
      redraw();
      const number = data.version ? data.version.number : 0;
      if (version != null && number > version && String(data.version.user) !== root.dataset.userId) {
        notice(`${data.version.by} published version ${number} of this workflow.`, "info");
      }
      version = number;
    }
  };
  follow();

  return () => {
    stopped = true;
    window.clearInterval(heartbeat);
    nodesObserver.disconnect();
    document.removeEventListener("trellis:select", onSelect);
    window.removeEventListener("pagehide", onLeave);
    onLeave();
  };
}
