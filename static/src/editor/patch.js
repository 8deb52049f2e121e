// Applies a save's JSON Patch (RFC 6902: add, remove, replace; see designer/workflows/patch.py) to the
// document the canvas holds. Nothing is changed in place: every object and list on an operation's path is
// copied once and everything else is shared, so the parts of the drawing built from unchanged nodes can tell
// (by identity) that nothing happened to them.

function parts(pointer) {
  if (!pointer.startsWith("/")) throw new Error(`not a JSON pointer: ${pointer}`);
  return pointer
    .slice(1)
    .split("/")
    .map((part) => part.replaceAll("~1", "/").replaceAll("~0", "~"));
}

export function applyPatch(doc, patch) {
  const copied = new Set();
  const own = (value) => {
    if (copied.has(value)) return value;
    const copy = Array.isArray(value) ? [...value] : { ...value };
    copied.add(copy);
    return copy;
  };
  const root = own(doc);
  for (const operation of patch) {
    const keys = parts(operation.path);
    if (!keys.length) throw new Error("a patch operation on the whole document");
    let parent = root;
    for (const key of keys.slice(0, -1)) {
      const index = Array.isArray(parent) ? Number(key) : key;
      if (parent[index] === null || typeof parent[index] !== "object") {
        throw new Error(`the patch path ${operation.path} is not in the document`);
      }
      parent[index] = own(parent[index]);
      parent = parent[index];
    }
    const last = keys[keys.length - 1];
    if (Array.isArray(parent)) {
      const index = last === "-" ? parent.length : Number(last);
      if (operation.op === "add") parent.splice(index, 0, operation.value);
      else if (operation.op === "remove") parent.splice(index, 1);
      else if (operation.op === "replace") parent[index] = operation.value;
      else throw new Error(`unsupported patch operation ${operation.op}`);
    } else if (operation.op === "remove") {
      delete parent[last];
    } else if (operation.op === "add" || operation.op === "replace") {
      parent[last] = operation.value;
    } else {
      throw new Error(`unsupported patch operation ${operation.op}`);
    }
  }
  return root;
}
