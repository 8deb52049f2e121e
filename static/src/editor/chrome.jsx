// The canvas's own chrome: loop-body frames drawn under the nodes, and the toolbar.
import { Panel, ViewportPortal } from "@xyflow/react";

import { KindIcon } from "./icons.jsx";

function loopProgress(loop) {
  if (!loop) return null;
  const total = loop.total == null ? "?" : loop.total;
  return `${loop.done}/${total} done${loop.failed ? `, ${loop.failed} failed` : ""}`;
}

export function Frames({ frames, loops = null }) {
  return (
    <ViewportPortal>
      {frames.map((frame) => (
        <div
          key={frame.id}
          className="wf-frame"
          data-foreach={frame.id}
          style={{
            transform: `translate(${frame.x}px, ${frame.y}px)`,
            width: frame.width,
            height: frame.height,
            "--region-color": frame.color,
          }}
        >
          <span className="wf-frame__label">
            <KindIcon kind="foreach" size={11} /> {frame.label} · loop body
            {loops && (
              <span
                className={`wf-frame__progress${loops[frame.id] && loops[frame.id].failed ? " has-failed" : ""}`}
                data-testid="loop-progress"
              >
                {loopProgress(loops[frame.id]) || "not run"}
              </span>
            )}
          </span>
        </div>
      ))}
    </ViewportPortal>
  );
}

function statusText(status) {
  if (status.state === "loading") return "Loading…";
  if (status.state === "saving") return "Saving…";
  if (status.state === "error") return "Not saved";
  return `Saved · revision ${status.revision}`;
}

export function Toolbar({ canEdit, status, historySize, onUndo, onRedo, onFit, onLayout, runs, run, onRunsOpen, onRun }) {
  return (
    <Panel position="top-left" className="wf-toolbar" aria-label="Canvas tools">
      {canEdit && (
        <>
          <button type="button" onClick={onUndo} disabled={!historySize.undo} title="Undo (Ctrl+Z)">
            <span aria-hidden="true">↶</span> Undo
          </button>
          <button type="button" onClick={onRedo} disabled={!historySize.redo} title="Redo (Ctrl+Shift+Z)">
            <span aria-hidden="true">↷</span> Redo
          </button>
          <span className="wf-toolbar__sep" />
        </>
      )}
      <button type="button" onClick={onFit} title="Fit the graph in view (F)">
        <span aria-hidden="true">⤢</span> Fit
      </button>
      {canEdit && (
        <button type="button" onClick={onLayout} title="Arrange nodes automatically">
          <span aria-hidden="true">⇶</span> Layout
        </button>
      )}
      <span className="wf-toolbar__sep" />
      <select
        className="wf-run-choice"
        aria-label="Show a run on the graph"
        value={run ? String(run.run.id) : ""}
        onFocus={onRunsOpen}
        onChange={(event) => onRun(event.target.value)}
      >
        <option value="">No run shown</option>
        {runs.map((item) => (
          <option key={item.id} value={String(item.id)}>
            {item.label}
          </option>
        ))}
      </select>
            <span className={`wf-status wf-status--${status.state}`} role="status" data-testid="save-status">
        {statusText(status)}
      </span>
      {!canEdit && <span className="wf-readonly">Read-only</span>}
    </Panel>
  );
}
