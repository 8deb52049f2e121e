import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

const root = fileURLToPath(new URL(".", import.meta.url));

// django-vite reads static/dist/manifest.json and serves the files from
// STATIC_URL + "dist/". A relative base makes chunks and assets resolve from
// the file that imports them, so the build works under any STATIC_URL (a CDN,
// a path prefix) without being rebuilt for it.
export default defineConfig({
  plugins: [react()],
  base: "./",
  publicDir: false,
  test: {
    include: ["static/src/**/*.test.js"],
  },
  build: {
    outDir: resolve(root, "static/dist"),
    emptyOutDir: true,
    manifest: "manifest.json",
    rollupOptions: {
      input: {
        editor: resolve(root, "static/src/editor/main.jsx"),
        compare: resolve(root, "static/src/compare/main.jsx"),
        runview: resolve(root, "static/src/runview/main.jsx"),
      },
    },
  },
});
