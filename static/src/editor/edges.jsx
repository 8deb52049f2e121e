// The back-edge (a body's route back to its foreach) is drawn under both of
// its nodes instead of straight through the body, so a loop reads as a loop.
import { BaseEdge, EdgeLabelRenderer, useInternalNode } from "@xyflow/react";
import { memo } from "react";

const RADIUS = 10;

function bottomOf(node) {
  if (!node) return 0;
  const { y } = node.internals.positionAbsolute;
  return y + (node.measured?.height || 0);
}

// Orthogonal path through the given points, corners rounded.
function rounded(points) {
  let d = `M ${points[0][0]} ${points[0][1]}`;
  for (let i = 1; i < points.length - 1; i += 1) {
    const [px, py] = points[i - 1];
    const [x, y] = points[i];
    const [nx, ny] = points[i + 1];
    const inLen = Math.hypot(x - px, y - py);
    const outLen = Math.hypot(nx - x, ny - y);
    const r = Math.min(RADIUS, inLen / 2, outLen / 2);
    const ax = x - (r * (x - px)) / (inLen || 1);
    const ay = y - (r * (y - py)) / (inLen || 1);
    const bx = x + (r * (nx - x)) / (outLen || 1);
    const by = y + (r * (ny - y)) / (outLen || 1);
    d += ` L ${ax} ${ay} Q ${x} ${y} ${bx} ${by}`;
  }
  const [lx, ly] = points[points.length - 1];
  return `${d} L ${lx} ${ly}`;
}

/** @param {import("@xyflow/react").EdgeProps & {data: {below?: number}}} props */
function BackEdge({ id, source, target, sourceX, sourceY, targetX, targetY, style, markerEnd, label, data }) {
  const from = useInternalNode(source);
  const to = useInternalNode(target);
  // Under the loop body's frame when there is one, so the return never crosses the body.
  const below = Math.max(data.below ?? 0, bottomOf(from), bottomOf(to), sourceY, targetY) + 18;
  const out = sourceX + 18;
  const into = targetX - 18;
  const path = rounded([
    [sourceX, sourceY],
    [out, sourceY],
    [out, below],
    [into, below],
    [into, targetY],
    [targetX, targetY],
  ]);
  return (
    <>
      <BaseEdge id={id} path={path} style={style} markerEnd={markerEnd} />
      {label && (
        <EdgeLabelRenderer>
          <div
            className="wf-edge-label nodrag nopan"
            style={{ transform: `translate(-50%, -50%) translate(${(out + into) / 2}px, ${below}px)` }}
          >
            {label}
          </div>
        </EdgeLabelRenderer>
      )}
    </>
  );
}

export const edgeTypes = { back: memo(BackEdge) };
