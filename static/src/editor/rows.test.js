import { describe, expect, it } from "vitest";

import { autoLayout, estimatedHeight, NODE_WIDTH, ROWS_FROM } from "./layout.js";
import { rowLayout } from "./rows.js";
import { nestedChain } from "./chainGraph.test-support.js";

function boxes(nodes, positions) {
  return nodes.map((node) => ({ id: node.id, ...positions[node.id], width: NODE_WIDTH,
    height: estimatedHeight(node.labels.length) }));
}

const overlap = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

describe("rowLayout", () => {
  it("wraps a long chain into rows shaped like a screen, no two nodes overlapping", () => {
    const { nodes, routes, regions } = nestedChain(600);
    const placed = boxes(nodes, autoLayout(nodes, routes, regions));
    const width = Math.max(...placed.map((b) => b.x + b.width)) - Math.min(...placed.map((b) => b.x));
    const height = Math.max(...placed.map((b) => b.y + b.height)) - Math.min(...placed.map((b) => b.y));
    expect(width / height).toBeGreaterThan(1);
    expect(width / height).toBeLessThan(2.5);
    placed.sort((a, b) => a.x - b.x);
    for (let i = 0; i < placed.length; i += 1) {
      for (let j = i + 1; j < placed.length && placed[j].x < placed[i].x + placed[i].width; j += 1) {
        expect(overlap(placed[i], placed[j]), `${placed[i].id} / ${placed[j].id}`).toBe(false);
      }
    }
  });

  it("keeps each loop body in a block of its own, right of its foreach", () => {
    const { nodes, routes, regions } = nestedChain(ROWS_FROM + 10);
    const placed = boxes(nodes, autoLayout(nodes, routes, regions));
    const body = placed.filter((b) => b.id.startsWith("line_"));
    const left = Math.min(...body.map((b) => b.x));
    const top = Math.min(...body.map((b) => b.y));
    const right = Math.max(...body.map((b) => b.x + b.width));
    const bottom = Math.max(...body.map((b) => b.y + b.height));
    for (const owner of placed.filter((b) => !b.id.startsWith("line_"))) {
      // Not inside the body's box, where its frame is drawn.
      expect(owner.x + owner.width < left || owner.x > right || owner.y + owner.height < top || owner.y > bottom).toBe(true);
      expect(owner.x + owner.width).toBeLessThan(left);
    }
  });

  it("puts each node a layer after its predecessors (right, or in a later row), branches in one layer", () => {
    const nodes = ["a", "b", "c", "d"].map((id) => ({ id, width: 220, height: 100 }));
    const routes = [{ source: "a", target: "b" }, { source: "a", target: "c" }, { source: "b", target: "d" },
      { source: "c", target: "d" }, { source: "d", target: "a" }];
    const at = rowLayout(nodes, routes);
    expect(at.b.x).toBe(at.c.x);
    expect(at.a.x).toBeLessThan(at.b.x);
    expect(at.d.x > at.b.x || at.d.y >= Math.max(at.b.y, at.c.y) + 100).toBe(true);
    expect(at.b.y).not.toBe(at.c.y);
  });
});
