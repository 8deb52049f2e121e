// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";

import { clientId, others } from "./live.js";

describe("following the draft's operation log", () => {
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
