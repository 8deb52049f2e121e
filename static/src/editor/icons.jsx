// Small stroke icons for node kinds (same drawings as the palette's in
// templates/editor/editor.html), so no icon font is needed.
const PATHS = {
  task: (
    <>
      <rect x="4" y="4" width="16" height="16" rx="3" />
      <path d="M10 9l5 3-5 3z" />
    </>
  ),
  foreach: (
    <>
      <path d="M4 12a8 8 0 0 1 14-5.3M20 12a8 8 0 0 1-14 5.3" />
      <path d="M18 3v4h-4M6 21v-4h4" />
    </>
  ),
  subgraph: (
    <>
      <rect x="3" y="3" width="18" height="18" rx="3" />
      <rect x="8" y="8" width="8" height="8" rx="1.5" />
    </>
  ),
  branch: (
    <>
      <circle cx="6" cy="5" r="2" />
      <circle cx="6" cy="19" r="2" />
      <circle cx="18" cy="7" r="2" />
      <path d="M6 7v10M18 9v1a4 4 0 0 1-4 4H9a3 3 0 0 0-3 3" />
    </>
  ),
  interrupt: (
    <>
      <circle cx="12" cy="12" r="9" />
      <path d="M10 9v6M14 9v6" />
    </>
  ),
};

export function KindIcon({ kind, size = 14 }) {
  return (
    <svg
      width={size}
      height={size}
      viewBox="0 0 24 24"
      fill="none"
      stroke="currentColor"
      strokeWidth="2"
      strokeLinecap="round"
      strokeLinejoin="round"
      aria-hidden="true"
      focusable="false"
    >
      {PATHS[kind] || PATHS.task}
    </svg>
  );
}
