// Where the operator console's built assets and browser sources live, and whether the build is present and current.
import { existsSync, readdirSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * Absolute path of the console's built assets (`dist/`: `index.html`, `assets/console.js`,
 * `assets/console.css`), written by this package's `prepare` script (`vite build`) on
 * `pnpm install`. The API serves them at `/console`.
 */
export const consoleAssetsDir: string = fileURLToPath(new URL("../dist", import.meta.url));

/** True when the built assets are present (the install's `prepare` step ran). */
export function consoleAssetsBuilt(): boolean {
  return (
    existsSync(`${consoleAssetsDir}/index.html`) &&
    existsSync(`${consoleAssetsDir}/assets/console.js`) &&
    existsSync(`${consoleAssetsDir}/assets/console.css`)
  );
}

/** The browser sources the assets are built from (`web/`). */
export const consoleSourceDir: string = fileURLToPath(new URL("../web", import.meta.url));

/**
 * True when a file under `web/` changed after the last build (`dist/index.html`): the served
 * console would not be the source's. Rebuild with `npm run build:console`. False when not built.
 */
export function consoleAssetsStale(): boolean {
  if (!consoleAssetsBuilt()) return false;
  const builtAt = statSync(`${consoleAssetsDir}/index.html`).mtimeMs;
  return readdirSync(consoleSourceDir).some((f) => statSync(`${consoleSourceDir}/${f}`).mtimeMs > builtAt);
}
