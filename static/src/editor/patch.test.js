import { describe, expect, it } from "vitest";

import { applyPatch } from "./patch.js";

describe("applyPatch", () => {
  it("applies add, remove and replace as designer/workflows/patch.py writes them", () => {
    const doc = { nodes: [{ id: "a" }, { id: "b" }, { id: "c" }], metadata: { positions: { a: { x: 1, y: 2 } } },
      "a/b": { "~": 1 } };
    const patched = applyPatch(doc, [
      { op: "replace", path: "/metadata/positions/a/x", value: 5 },
      { op: "add", path: "/metadata/positions/b", value: { x: 0, y: 0 } },
      { op: "remove", path: "/nodes/1" },
      { op: "add", path: "/nodes/2", value: { id: "d" } },
      { op: "replace", path: "/a~1b/~0", value: 2 },
      { op: "remove", path: "/nodes/0/id" },
    ]);
    expect(patched).toEqual({ nodes: [{}, { id: "c" }, { id: "d" }],
      metadata: { positions: { a: { x: 5, y: 2 }, b: { x: 0, y: 0 } } }, "a/b": { "~": 2 } });
  });

  it("changes nothing in place and shares what the patch does not touch", () => {
    const doc = { nodes: [{ id: "a" }, { id: "b" }], routes: [], metadata: { positions: { a: { x: 1, y: 2 } } } };
    const copy = structuredClone(doc);
    const patched = applyPatch(doc, [{ op: "replace", path: "/metadata/positions/a/x", value: 9 }]);
    expect(doc).toEqual(copy);
    expect(patched.nodes).toBe(doc.nodes);
    expect(patched.routes).toBe(doc.routes);
    expect(patched.metadata).not.toBe(doc.metadata);
  });

  it("refuses a path the document does not have", () => {
    expect(() => applyPatch({ nodes: [] }, [{ op: "replace", path: "/metadata/positions/a", value: 1 }])).toThrow();
  });
});
