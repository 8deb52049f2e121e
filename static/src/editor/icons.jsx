// Small stroke icons for node kinds. The drawings live once, as SVG symbols
// in templates/editor/editor.html (partial kind-icon-symbols), which the
// palette uses too; here each icon is a <use> of its kind's symbol.
export const ICON_KINDS = ["task", "foreach", "subgraph", "branch", "interrupt"];

export function iconHref(kind) {
  return `#wf-kind-${ICON_KINDS.includes(kind) ? kind : "task"}`;
}

export function KindIcon({ kind, size = 14 }) {
  return (
    <svg
      className="kind-icon"
      width={size}
      height={size}
      fill="none"
      stroke="currentColor"
      strokeWidth="2"
      strokeLinecap="round"
      strokeLinejoin="round"
      aria-hidden="true"
      focusable="false"
    >
      <use href={iconHref(kind)} />
    </svg>
  );
}
