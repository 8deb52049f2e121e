// Canvas drawing of workflow nodes: one component for every kind, one source
// handle per label the analyzer says the node can emit.
// @ts-ignore -- @xyflow/react exports Handle as a component and as a type; a JS file sees only the type
import { Handle, Position } from "@xyflow/react";
import { memo } from "react";

import { KindIcon } from "./icons.jsx";

export const KINDS = {
  task: "Task",
  foreach: "For each",
  subgraph: "Subgraph",
  branch: "Branch",
  interrupt: "Interrupt",
};

// What a route label is drawn as; `known` is false for a label the node's kind cannot emit (the editor's warning).
function labelRole(kind, label, known) {
  if (!known) return "unknown";
  if (label === "error") return "error";
  if (kind === "foreach") return label === "loop" ? "loop" : "done";
  return "normal";
}

// A node's colour band: its outermost foreach region's colour, on the editor's canvas and the run page's.
export function regionStyle(data) {
  return /** @type {import("react").CSSProperties} */ ({ "--region-color": data.regionColor || "transparent" });
}

// The head every node shares on the editor's canvas and the run page's: its kind, and whether it is the start.
// `children` adds to it (the editor's problem badge).
export function NodeHead({ data, children = null }) {
  return (
    <div className="wf-node__head">
      <span className="wf-node__kind">
        <KindIcon kind={data.kind} size={13} />
      </span>
      <span className="wf-node__kind-label">{KINDS[data.kind] || data.kind}</span>
      {data.isStart && <span className="wf-node__start">start</span>}
      {children}
    </div>
  );
}

// A node's route labels, each with the handle its routes leave from. `handle(name, known)` adds to the handle's
// props (the editor's hint; the run page's handles connect nothing); `showUnknown` marks labels the kind cannot emit.
export function NodeLabels({ data, handle, showUnknown = true, hidden = false }) {
  return (
    <ul className="wf-node__labels" aria-hidden={hidden ? "true" : undefined}>
      {data.labels.map(({ name, known }) => (
        <li key={name} className={`wf-label wf-label--${labelRole(data.kind, name, known || !showUnknown)}`}>
          <span className="wf-label__text">{name}</span>
          <Handle
            type="source"
            position={Position.Right}
            id={name}
            className="wf-handle wf-handle--out"
            {...handle(name, known)}
          />
        </li>
      ))}
    </ul>
  );
}

function WorkflowNode({ id, data, selected }) {
  const classes = [
    "wf-node",
    `wf-node--${data.kind}`,
    selected ? "is-selected" : "",
    data.errors ? "has-errors" : "",
    data.region.length ? "in-region" : "",
    data.unreachable ? "is-unreachable" : "",
    data.run ? `run-${data.run.status}` : "",
  ];
  const problems = data.errors + data.warnings;
  return (
    <div
      className={classes.filter(Boolean).join(" ")}
      style={regionStyle(data)}
      data-kind={data.kind}
    >
      <Handle type="target" position={Position.Left} id="in" className="wf-handle wf-handle--in" />
      <NodeHead data={data}>
        {problems > 0 && (
          <span
            className={`wf-node__badge ${data.errors ? "is-error" : "is-warning"}`}
            title={`${data.errors} error(s), ${data.warnings} warning(s)`}
            aria-label={`${data.errors} errors, ${data.warnings} warnings`}
            data-testid="node-badge"
          >
            {problems}
          </span>
        )}
      </NodeHead>
      <div className="wf-node__title" title={id}>{data.title}</div>
      {data.run && (
        <div className="wf-node__run" data-testid="run-status" data-status={data.run.status}>
          <span className={`wf-run-badge is-${data.run.status}`}>{data.run.status}</span>
          {data.run.started > 0 && (
            <span className="wf-node__run-counts">
              {data.run.completed} done{data.run.failed ? `, ${data.run.failed} failed` : ""}
            </span>
          )}
        </div>
      )}
      {data.subtitle && <div className="wf-node__sub" title={data.subtitle}>{data.subtitle}</div>}
      {data.region.length > 0 && (
        <div className="wf-node__region" title="inside the body of these foreach nodes, outermost first">
          in {data.region.join(" › ")}
        </div>
      )}
      <NodeLabels
        data={data}
        handle={(name, known) => ({
          title: known ? `drag from "${name}" to a node to route it` : `"${name}" is not a label this node emits`,
        })}
      />
    </div>
  );
}

export const nodeTypes = { workflow: memo(WorkflowNode) };
