import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * Absolute path of the console's built assets (`dist/`: `index.html`, `assets/console.js`,
 * `assets/console.css`), written by this package's `prepare` script (`vite build`) on
 * `pnpm install`. The API serves them at `/console` (docs/DESIGN.md §7).
 */
export const consoleAssetsDir: string = fileURLToPath(new URL("../dist", import.meta.url));

/** True when the built assets are present (the install's `prepare` step ran). */
export function consoleAssetsBuilt(): boolean {
  return existsSync(`${consoleAssetsDir}/index.html`) && existsSync(`${consoleAssetsDir}/assets/console.js`) && existsSync(`${consoleAssetsDir}/assets/console.css`);
}
