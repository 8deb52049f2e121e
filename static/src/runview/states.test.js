import { describe, expect, it } from "vitest";

import { countsText, executionsUrl, firstCall, stateClass } from "./states.js";

describe("countsText", () => {
  it("counts a loop's failed items as failed, beside done and running, out of its total", () => {
    expect(countsText("foreach", {}, { done: 1, failed: 2, running: 0, total: 3 })).toBe(
      "1 done · 2 failed · 0 running / 3",
    );
    expect(countsText("foreach", {}, { done: 0, failed: 0, running: 4, total: null })).toBe(
      "0 done · 0 failed · 4 running / ?",
    );
  });

  it("says nothing for a loop or a node that never ran", () => {
    expect(countsText("foreach", undefined, undefined)).toBe("");
    expect(countsText("task", { started: 0, completed: 0, failed: 0 }, undefined)).toBe("");
  });

  it("gives a node's done, failed and running executions, leaving out zeros after done", () => {
    expect(countsText("task", { started: 3, completed: 2, failed: 1, running: 0 })).toBe("2 done · 1 failed");
    expect(countsText("task", { started: 2, completed: 1, failed: 0, running: 1 })).toBe("1 done · 1 running");
  });
});

describe("executionsUrl", () => {
  it("fills the node slot (escaped) and adds the scope shown", () => {
    const template = "/runs/7/nodes/__node__/executions/";
    expect(executionsUrl(template, "__node__", "price", "")).toBe("/runs/7/nodes/price/executions/");
    expect(executionsUrl(template, "__node__", "a b", "frame_12")).toBe(
      "/runs/7/nodes/a%20b/executions/?scope=frame_12",
    );
  });
});

describe("firstCall", () => {
  it("opens a failed call first, then one under way, else the first", () => {
    const calls = [{ key: "a", state: "cancelled" }, { key: "b", state: "running" }, { key: "c", state: "failed" }];
    expect(firstCall(calls).key).toBe("c");
    expect(firstCall(calls.slice(0, 2)).key).toBe("b");
    expect(firstCall(calls.slice(0, 1)).key).toBe("a");
    expect(firstCall([])).toBe(null);
  });
});

describe("stateClass", () => {
  it("makes every state a class, unknown ones not reached", () => {
    expect(stateClass("not reached")).toBe("not-reached");
    expect(stateClass("failed")).toBe("failed");
    expect(stateClass("bogus")).toBe("not-reached");
  });
});
