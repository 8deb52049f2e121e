// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";

import { currentRevision, discardQueued, enqueue, readRevisionFrom } from "./queue.js";

describe("the tab's edit queue", () => {
  it("runs edits one at a time, in order, even when an earlier one is slower", async () => {
    const seen = [];
    const slow = enqueue(() => new Promise((resolve) => setTimeout(() => resolve(seen.push("first")), 20)));
    const fast = enqueue(async () => seen.push("second"));
    await Promise.all([slow, fast]);
    expect(seen).toEqual(["first", "second"]);
  });

  it("goes on after a failed edit", async () => {
    const failed = enqueue(async () => {
      throw new Error("network");
    });
    await expect(failed).rejects.toThrow("network");
    await expect(enqueue(async () => "next")).resolves.toBe("next");
  });

  it("skips what was queued before a conflict, not what comes after", async () => {
    let release;
    const blocker = enqueue(() => new Promise((resolve) => (release = resolve)));
    const stale = enqueue(async () => "stale");
    await new Promise((resolve) => setTimeout(resolve, 0)); // the blocker is now in flight
    expect(release).toBeTypeOf("function");
    discardQueued();
    const fresh = enqueue(async () => "fresh");
    release();
    await blocker;
    await expect(stale).resolves.toEqual({ skipped: true });
    await expect(fresh).resolves.toBe("fresh");
  });

  it("keeps no revision of its own: it reads the store's, as a number", () => {
    readRevisionFrom(() => null);
    expect(currentRevision()).toBeNull();
    let shown = "7";
    readRevisionFrom(() => shown);
    expect(currentRevision()).toBe(7);
    shown = 8;
    expect(currentRevision()).toBe(8);
  });
});
