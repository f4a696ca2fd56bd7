// Where the harness finds the workspace and the entry points of the processes it starts.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { API_HEAP_FLAGS } from "@mosoo/contracts";

/** The workspace root: the nearest folder above this file that holds `pnpm-workspace.yaml`. */
export function workspaceRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "pnpm-workspace.yaml"))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error("e2e.workspace_not_found: no pnpm-workspace.yaml above packages/e2e");
    dir = parent;
  }
  return dir;
}

/**
 * How the harness runs the API and the Driver: `tsx`, their TypeScript sources through the tsx
 * loader (the default: no build step, what the crash tests and the demo run), or `compiled`, the
 * plain JavaScript `scripts/build.mjs` writes to `apps/<app>/dist/main.js` (what `npm start` runs;
 * a start costs about half the CPU, docs/performance-notes.md "Compiled start"). Call
 * {@link buildCompiledApps} before the first `compiled` start. The fixture provider always runs through tsx.
 */
export type EntryMode = "tsx" | "compiled";

/**
 * Absolute paths of the process entry points the harness starts. They run as ONE node process
 * each (`node --import tsx <main>`, or `node dist/main.js` for the API and the Driver in `compiled`
 * mode, the API with `API_HEAP_FLAGS` before it as `npm start` runs it), not through the `tsx` CLI (which forks a child that a SIGKILL of the parent would leave
 * running), so a kill in a crash scenario really kills the process. `nodeArgs` are the loader
 * arguments of a TypeScript entry (the provider, the CLIs); `api.args` and `driver.args` are the
 * whole node argument list of that app in `mode` (default `tsx`), before its own CLI arguments.
 */
export function entryPoints(mode: EntryMode = "tsx") {
  const root = workspaceRoot();
  const nodeArgs = ["--import", "tsx"];
  const app = (name: "api" | "driver") => {
    const main = mode === "compiled" ? "dist/main.js" : "src/main.ts";
    const compiledArgs = name === "api" ? [...API_HEAP_FLAGS, main] : [main];
    return { cwd: join(root, "apps", name), main, args: mode === "compiled" ? compiledArgs : [...nodeArgs, main] };
  };
  return {
    root,
    node: process.execPath,
    nodeArgs,
    api: app("api"),
    driver: app("driver"),
    provider: { cwd: join(root, "packages", "fixture-provider"), main: "src/main.ts" },
  };
}

/**
 * Builds the API's and the Driver's compiled entries (`node scripts/build.mjs api driver`, about a
 * second; it rewrites only output files whose content changed, so a process already running from
 * `dist/` is never disturbed), for {@link entryPoints} in `compiled` mode.
 * @throws Error (from `execFileSync`, with the build's stderr) when the build fails (`build.failed`).
 */
export function buildCompiledApps(): void {
  const root = workspaceRoot();
  execFileSync(process.execPath, [join(root, "scripts", "build.mjs"), "api", "driver"], { cwd: root, stdio: ["ignore", "ignore", "pipe"] });
}
