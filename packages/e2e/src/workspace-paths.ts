import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

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
 * Absolute paths of the process entry points the harness starts. They run as ONE node process
 * each (`node --import tsx <main>`), not through the `tsx` CLI (which forks a child that a SIGKILL
 * of the parent would leave running), so a kill in a crash scenario really kills the process.
 */
export function entryPoints() {
  const root = workspaceRoot();
  return {
    root,
    node: process.execPath,
    nodeArgs: ["--import", "tsx"],
    api: { cwd: join(root, "apps", "api"), main: "src/main.ts" },
    driver: { cwd: join(root, "apps", "driver"), main: "src/main.ts" },
    provider: { cwd: join(root, "packages", "fixture-provider"), main: "src/main.ts" },
  };
}
