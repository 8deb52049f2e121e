// A graph the layout tests share: size template nodes in a chain inside customers -> orders, as the editor
// benchmark draws them (bench/bench_editor_scale.py), with each node's labels and the loop regions.
export function nestedChain(size) {
  const names = Array.from({ length: size }, (_, n) => `line_${n}`);
  const loop = [{ name: "loop" }, { name: "done" }, { name: "error" }];
  const nodes = [{ id: "customers", labels: loop }, { id: "orders", labels: loop },
    ...names.map((id) => ({ id, labels: [{ name: "ok" }, { name: "error" }] }))];
  const routes = [
    { source: "customers", label: "loop", target: "orders" },
    { source: "orders", label: "loop", target: names[0] },
    { source: "orders", label: "done", target: "customers" },
    ...names.map((id, n) => ({ source: id, label: "ok", target: names[n + 1] || "orders" })),
  ];
  const regions = { customers: [], orders: ["customers"] };
  for (const id of names) regions[id] = ["customers", "orders"];
  return { nodes, routes, regions, names };
}
