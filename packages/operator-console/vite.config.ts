import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

/**
 * Builds the console's browser app (web/) into dist/ with fixed file names (no content hash),
 * so the API can name them in its own pages: `dist/index.html`, `dist/assets/console.js`,
 * `dist/assets/console.css`. Served under `/console/`. No inline script or
 * style is emitted, so the console's Content-Security-Policy can forbid both.
 */
export default defineConfig({
  root: fileURLToPath(new URL("./web", import.meta.url)),
  base: "/console/",
  logLevel: "warn",
  build: {
    outDir: fileURLToPath(new URL("./dist", import.meta.url)),
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    rollupOptions: {
      output: {
        entryFileNames: "assets/console.js",
        chunkFileNames: "assets/[name].js",
        assetFileNames: "assets/console[extname]",
      },
    },
  },
});
