import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

const root = fileURLToPath(new URL(".", import.meta.url));

// django-vite reads static/dist/manifest.json and serves the files from
// STATIC_URL + "dist/", so chunk imports must resolve under the same base.
export default defineConfig({
  plugins: [react()],
  base: "/static/dist/",
  publicDir: false,
  build: {
    outDir: resolve(root, "static/dist"),
    emptyOutDir: true,
    manifest: "manifest.json",
    rollupOptions: {
      input: {
        editor: resolve(root, "static/src/editor/main.jsx"),
        compare: resolve(root, "static/src/compare/main.jsx"),
      },
    },
  },
});
