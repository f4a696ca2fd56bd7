// The demo's command line: a bad option is one readable line and exit 2, before any process starts.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { entryPoints } from "../src/workspace-paths.js";

/** Runs `demo.main.ts` with `args` (synchronously; it exits before starting anything for these). */
function demo(...args: string[]) {
  const { root, node } = entryPoints();
  const r = spawnSync(node, ["--import", "tsx", join(root, "packages", "e2e", "src", "demo.main.ts"), ...args], {
    cwd: join(root, "packages", "e2e"),
    encoding: "utf8",
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("npm run demo options", () => {
  it("--only without a scenario: exit 2 and one line naming the option (not a run of every scenario)", () => {
    const r = demo("--only");
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split("\n")).toEqual(["error: option '--only <scenario>' argument missing"]);
    expect(r.stdout).not.toContain("==");
  });

  it("--only with an unknown scenario: exit 2 and one line listing the known ones", () => {
    const r = demo("--only", "no-such-scenario");
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain("unknown scenario (known: driver-crash-after-commit,");
  });

  it("--help lists every scenario and exits 0", () => {
    const r = demo("--help");
    expect(r.status).toBe(0);
    for (const name of ["driver-crash-after-commit", "reconciled-by-task-handle", "scale-out-api-instance-killed"])
      expect(r.stdout.replace(/\s+/g, " ")).toContain(name);
  });
});
