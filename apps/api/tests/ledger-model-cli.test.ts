/**
 * `npm run verify:model` (scripts/model-runs.ts) store options: `--store sqlite|pglite|postgres` and
 * `--database-url`, refused as bad input (one line on stderr, exit 2, no run started) when wrong.
 * The runs themselves are covered by ledger-model.property.test.ts. (Each case spawns the script: a few
 * seconds of module loading, so only the two refusals are here.)
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SCRIPT = fileURLToPath(new URL("../scripts/model-runs.ts", import.meta.url));

/** Runs the script with `args` (tsx, as `npm run verify:model` does); its exit status, stdout and stderr. */
function verifyModel(...args: string[]) {
  const out = spawnSync(process.execPath, ["--import", "tsx", SCRIPT, ...args], {
    encoding: "utf8",
    env: { ...process.env, MOSOO_DATABASE_URL: "" },
  });
  return { status: out.status, stdout: out.stdout, stderr: out.stderr };
}

describe("verify:model --store", () => {
  it("refuses an unknown store in one line with exit 2, before any run", () => {
    const r = verifyModel("--store", "mysql", "--runs", "1");
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain("Allowed choices are sqlite, pglite, postgres");
    expect(r.stdout).not.toContain("runs, store");
  });

  it("refuses --database-url without --store postgres in one line with exit 2", () => {
    const r = verifyModel("--database-url", "postgres://u:p@127.0.0.1:1/postgres", "--runs", "1");
    expect(r.status).toBe(2);
    expect(r.stderr.trim()).toBe("verify:model: --database-url goes with --store postgres");
  });

  it("refuses a server it cannot use, or a URL that is not one, in one line with exit 2 and no stack or password", () => {
    const refused = verifyModel("--store", "postgres", "--database-url", "postgres://u:pw-hunter2@127.0.0.1:2/x", "--runs", "1");
    expect(refused.status).toBe(2);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toMatch(/^verify:model: cannot open the PostgreSQL store: .*ECONNREFUSED/);
    const badPort = verifyModel("--store", "postgres", "--database-url", "postgres://u:pw-hunter2@127.0.0.1:70000/x", "--runs", "1");
    expect(badPort.status).toBe(2);
    expect(badPort.stderr.trim()).toBe("verify:model: --database-url: the port must be 1-65535 (got 70000)");
    for (const r of [refused, badPort]) expect(r.stderr + r.stdout).not.toMatch(/hunter2|\n\s+at /);
  });
});
