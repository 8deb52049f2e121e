// Where the run graph's viewport goes so a node that took the keyboard's focus is in view. A person tabbing
// through the nodes' buttons cannot see one the canvas has clipped, and the browser's own way (scrolling the
// clipped canvas) shifts the drawing under the pan and zoom React Flow keeps, so the canvas pans itself instead.

// How far inside the canvas's edges a revealed node lands, in screen px: its focus ring and a little of what
// routes into it show too.
export const REVEAL_MARGIN = 32;

/** 0 when [start, start + size) is wholly inside [0, room]; else the offset that brings it inside
 * [margin, room - margin] with the least movement. A node larger than the room shows its start (its title and
 * button are at the top left).
 * @param {number} start @param {number} size @param {number} room @param {number} margin */
function shift(start, size, room, margin) {
  if (start >= 0 && start + size <= room) return 0;
  const low = margin;
  const high = room - margin;
  if (size > high - low || start < low) return low - start;
  return high - (start + size);
}

/** The viewport that shows `box` (a node's flow coordinates) inside `area` (the canvas's size), moving the
 * drawing as little as it can and never zooming; null when the node is wholly in view already, so a focus
 * there moves nothing (along an axis where it is in view, it does not move either).
 * @param {{x: number, y: number, width: number, height: number}} box
 * @param {{x: number, y: number, zoom: number}} viewport
 * @param {{width: number, height: number}} area
 * @param {number} [margin] */
export function revealViewport(box, viewport, area, margin = REVEAL_MARGIN) {
  const { zoom } = viewport;
  // Never more than a third of the room: on a small canvas the margin must not push the node out again.
  const mx = Math.min(margin, area.width / 3);
  const my = Math.min(margin, area.height / 3);
  const dx = shift(box.x * zoom + viewport.x, box.width * zoom, area.width, mx);
  const dy = shift(box.y * zoom + viewport.y, box.height * zoom, area.height, my);
  if (!dx && !dy) return null;
  return { x: viewport.x + dx, y: viewport.y + dy, zoom };
}
