import { describe, expect, it } from "vitest";

import { offsetCurve, parallelOffsets, SPACING } from "./geometry.js";

const edge = (source, label, target) => ({ id: `${source} --${label}`, source, target });

// The distance of point p from the straight line a -> b.
function fromLine(p, a, b) {
  const [dx, dy] = [b[0] - a[0], b[1] - a[1]];
  return ((p[0] - a[0]) * dy - (p[1] - a[1]) * dx) / Math.hypot(dx, dy);
}

describe("parallelOffsets", () => {
  it("leaves a route alone between its nodes straight", () => {
    const offsets = parallelOffsets([edge("a", "ok", "b"), edge("b", "ok", "c")]);
    expect(offsets.get("a --ok")).toEqual({ offset: 0, flip: 1 });
    expect(offsets.get("b --ok")).toEqual({ offset: 0, flip: 1 });
  });

  it("fans routes between one pair out symmetrically, whatever order they are listed in", () => {
    const routes = [edge("assess", "review", "record"), edge("assess", "auto", "record")];
    const offsets = parallelOffsets(routes);
    expect(offsets.get("assess --auto").offset).toBe(-SPACING / 2);
    expect(offsets.get("assess --review").offset).toBe(SPACING / 2);
    expect(parallelOffsets([...routes].reverse())).toEqual(offsets);
    const three = parallelOffsets([...routes, edge("assess", "error", "record")]);
    expect([...three.values()].map((o) => o.offset).sort((x, y) => x - y)).toEqual([-SPACING, 0, SPACING]);
  });

  it("groups both directions of a pair and marks the reversed one", () => {
    const offsets = parallelOffsets([edge("a", "ok", "b"), edge("b", "back", "a")]);
    expect(offsets.get("a --ok").flip).toBe(1);
    expect(offsets.get("b --back").flip).toBe(-1);
    expect(offsets.get("a --ok").offset).not.toBe(offsets.get("b --back").offset);
  });

  it("ignores a route from a node to itself", () => {
    expect(parallelOffsets([edge("a", "again", "a")]).size).toBe(0);
  });
});

describe("offsetCurve", () => {
  const ends = { sourceX: 100, sourceY: 50, targetX: 400, targetY: 170 };

  it("puts the label on the straight line's middle when there is no offset", () => {
    const { labelX, labelY, path } = offsetCurve(ends);
    expect(labelX).toBeCloseTo(250);
    expect(labelY).toBeCloseTo(110);
    expect(path.startsWith("M 100 50 C")).toBe(true);
    expect(path.endsWith("400 170")).toBe(true);
  });

  it("moves the middle of the curve exactly `offset` off the line, to opposite sides for opposite signs", () => {
    const a = [ends.sourceX, ends.sourceY];
    const b = [ends.targetX, ends.targetY];
    const left = offsetCurve({ ...ends, offset: -18 });
    const right = offsetCurve({ ...ends, offset: 18 });
    expect(fromLine([left.labelX, left.labelY], a, b)).toBeCloseTo(18);
    expect(fromLine([right.labelX, right.labelY], a, b)).toBeCloseTo(-18);
    expect(Math.hypot(left.labelX - right.labelX, left.labelY - right.labelY)).toBeCloseTo(36);
    expect(left.path).not.toBe(right.path);
  });

  it("draws two routes of one pair apart in either direction", () => {
    const routes = [edge("a", "ok", "b"), edge("b", "back", "a")];
    const offsets = parallelOffsets(routes);
    const there = offsetCurve({ ...ends, ...offsets.get("a --ok") });
    // the reverse route runs between the same two points the other way
    const back = offsetCurve({ sourceX: ends.targetX, sourceY: ends.targetY, targetX: ends.sourceX,
                               targetY: ends.sourceY, ...offsets.get("b --back") });
    expect(Math.hypot(there.labelX - back.labelX, there.labelY - back.labelY)).toBeCloseTo(SPACING);
  });
});
