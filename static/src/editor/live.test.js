// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";

import { clientId, others, planFor } from "./live.js";

const entry = (revision, client) => ({ revision, client, ops: ["move_nodes"] });

describe("following the draft's operation log", () => {
  it("reloads for another tab's newer change, not for its own or for what is already shown", () => {
    const answer = (entries, extra = {}) => ({ revision: entries.at(-1)?.revision ?? 4, entries, ...extra });
    expect(planFor(answer([entry(5, "me")]), 4, "me")).toBe("none");
    expect(planFor(answer([entry(5, "me"), entry(6, "them")]), 4, "me")).toBe("reload");
    expect(planFor(answer([entry(5, "them")]), 5, "me")).toBe("none");
    expect(planFor(answer([], { revision: 9, resync: true }), 4, "me")).toBe("reload");
  });

  it("shows each other person once, with the selection of one of their tabs, never this tab", () => {
    const presence = [
      { client: "me", user: 1, node: "a" },
      { client: "t2", user: 2, node: null },
      { client: "t3", user: 2, node: "b" },
      { client: "t4", user: 1, node: "c" },
    ];
    expect(others(presence, "me").map((p) => [p.client, p.node])).toEqual([["t3", "b"], ["t4", "c"]]);
  });

  it("names this tab with one stable id", () => {
    expect(clientId()).toMatch(/^[0-9a-f]{24}$/);
    expect(clientId()).toBe(clientId());
  });
});
