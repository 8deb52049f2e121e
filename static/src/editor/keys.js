// Whether a key pressed on `target` is typing: the editor's one-key shortcuts (F, [ and ]) leave it alone.
export function isTyping(target) {
  if (!target || !(target instanceof Element)) return false;
  return Boolean(target.closest("input, textarea, select, [contenteditable=''], [contenteditable='true']"));
}
