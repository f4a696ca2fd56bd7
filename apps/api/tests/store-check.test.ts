/**
 * `npm run store:check` as an operator runs it: a sound store is `ok` (exit 0); a row whose foreign key names no
 * parent is named so it can be found, by its rowid or, in a `WITHOUT ROWID` table (`run_events`,
 * `external_tool_effect_attempts`, whose rows SQLite's `foreign_key_check` gives no rowid), by its primary key (exit 1).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { createDoubleWorld, dispatchWrite } from "./kit/index.js";

const API_DIR = join(import.meta.dirname, "..");
const run = promisify(execFile);
/** Runs `store:check` on `file` as a process; resolves with its exit code and output. */
const storeCheck = (file: string) =>
  run(process.execPath, ["--import", "tsx", "src/store-check.main.ts", file], { cwd: API_DIR }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A store file holding one dispatched write (its run, events, effect and attempt all sound), closed again. */
async function soundStore(): Promise<string> {
  dir = mkdtempSync(join(tmpdir(), "mosoo-store-check-"));
  const dbFile = join(dir, "api.db");
  const world = createDoubleWorld({ bind: false, dbFile });
  try {
    await dispatchWrite(world);
  } finally {
    world.close();
  }
  return dbFile;
}

describe("store:check", () => {
  it("names an orphan row of a WITHOUT ROWID table by its primary key, and a rowid table's by its rowid", async () => {
    const dbFile = await soundStore();
    expect(await storeCheck(dbFile)).toMatchObject({ code: 0, stdout: `store.check: ${dbFile}: ok\n` });

    const sqlite = new Database(dbFile);
    sqlite.pragma("foreign_keys = OFF");
    const event = sqlite.prepare(
      "INSERT INTO run_events (id, run_id, seq, type, terminal, payload_json, created_at_ms) VALUES (?, 'run-gone', ?, 'run.created', 0, '{}', 0)",
    );
    event.run("event-b", 2);
    event.run("event-a", 1);
    sqlite
      .prepare(
        "INSERT INTO external_tool_effect_attempts (effect_id, attempt, status, connection_id, started_at_ms) VALUES ('effect-gone', 3, 'executing', 'c', 0)",
      )
      .run();
    const reconciliation = sqlite
      .prepare(
        "INSERT INTO effect_reconciliations (id, effect_id, adapter_id, adapter_version, trigger, outcome, started_at_ms, finished_at_ms) " +
          "VALUES ('rec-1', 'effect-gone', 'a', '1', 'sweep', 'still_unknown', 0, 0)",
      )
      .run();
    sqlite.close();

    const found = await storeCheck(dbFile);
    expect(found.code).toBe(1);
    expect(found.stdout.trim().split("\n").sort()).toEqual(
      [
        "foreign key: run_events row (id='event-a') names no session_runs",
        "foreign key: run_events row (id='event-b') names no session_runs",
        "foreign key: external_tool_effect_attempts row (effect_id='effect-gone', attempt=3) names no external_tool_effects",
        `foreign key: effect_reconciliations row ${reconciliation.lastInsertRowid} names no external_tool_effects`,
        `store.check: ${dbFile}: 4 problem(s)`,
      ].sort(),
    );
    expect(found.stdout).not.toContain("row ?");
  }, 60_000);
});
