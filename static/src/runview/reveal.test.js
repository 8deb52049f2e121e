import { describe, expect, it } from "vitest";

import { revealViewport } from "./reveal.js";

const AREA = { width: 800, height: 400 };
const NODE = { width: 220, height: 100 };

describe("revealViewport", () => {
  it("moves nothing for a node already in view", () => {
    expect(revealViewport({ x: 100, y: 50, ...NODE }, { x: 0, y: 0, zoom: 1 }, AREA)).toBeNull();
  });

  it("pans a node off the right edge just inside it, keeping the zoom", () => {
    const view = revealViewport({ x: 1500, y: 50, ...NODE }, { x: 0, y: 0, zoom: 1 }, AREA, 32);
    expect(view).toEqual({ x: 800 - 32 - 1720, y: 0, zoom: 1 });
  });

  it("pans a node off the left and top edges, at the current zoom", () => {
    const view = revealViewport({ x: 0, y: 0, ...NODE }, { x: -500, y: -300, zoom: 0.5 }, AREA, 32);
    expect(view).toEqual({ x: 32, y: 32, zoom: 0.5 });
  });

  it("shows the start of a node too wide for the canvas", () => {
    const view = revealViewport({ x: 400, y: 10, width: 2000, height: 100 }, { x: 0, y: 0, zoom: 1 }, AREA, 32);
    expect(view).toEqual({ x: 32 - 400, y: 0, zoom: 1 });
  });

  it("moves a node cut by an edge only along that edge, just inside the margin", () => {
    expect(revealViewport({ x: 600, y: 10, ...NODE }, { x: 0, y: 0, zoom: 1 }, AREA, 32)).toEqual({
      x: -52, y: 0, zoom: 1,
    });
    expect(revealViewport({ x: 580, y: 10, ...NODE }, { x: 0, y: 0, zoom: 1 }, AREA, 32)).toBeNull();
  });
});
