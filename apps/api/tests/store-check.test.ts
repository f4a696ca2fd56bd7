/**
 * `npm run store:check` as an operator runs it: a sound store is `ok` (exit 0); a row whose foreign key names no
 * parent is named so it can be found, by its rowid or, in a `WITHOUT ROWID` table (`run_events`,
 * `external_tool_effect_attempts`, whose rows SQLite's `foreign_key_check` gives no rowid), by its primary key (exit 1).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
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

  it("writes a key's control characters escaped, so one problem stays one line and no terminal sequence is printed", async () => {
    const dbFile = await soundStore();
    const sqlite = new Database(dbFile);
    sqlite.pragma("foreign_keys = OFF");
    sqlite
      .prepare(
        "INSERT INTO run_events (id, run_id, seq, type, terminal, payload_json, created_at_ms) VALUES (?, 'run-gone', 1, 'run.created', 0, '{}', 0)",
      )
      .run(`x'\nstore.check: ${dbFile}: ok\u001b[2J`);
    sqlite.close();
    const found = await storeCheck(dbFile);
    expect(found.code).toBe(1);
    expect(found.stdout.trim().split("\n")).toEqual([
      `foreign key: run_events row (id='x''\\u000astore.check: ${dbFile}: ok\\u001b[2J') names no session_runs`,
      `store.check: ${dbFile}: 1 problem(s)`,
    ]);
    expect(found.stdout).not.toContain("\u001b");
  }, 60_000);

  it("refuses what is not a Mosoo store, naming the file: missing (store.not_found), empty or another program's SQLite file (store.not_mosoo), not SQLite (store.check), exit 2", async () => {
    dir = mkdtempSync(join(tmpdir(), "mosoo-store-check-"));
    const missing = join(dir, "missing.db");
    const empty = join(dir, "empty.db");
    const other = join(dir, "other.db");
    const text = join(dir, "text.db");
    writeFileSync(empty, "");
    const o = new Database(other);
    o.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)");
    o.close();
    writeFileSync(text, "not a database\n");
    expect(await storeCheck(missing)).toMatchObject({ code: 2, stdout: "", stderr: `store.not_found: no store file at ${missing}\n` });
    for (const file of [empty, other]) {
      const r = await storeCheck(file);
      expect(r).toMatchObject({ code: 2, stdout: "" });
      expect(r.stderr).toMatch(new RegExp(`^store\\.not_mosoo: ${file.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} holds no Mosoo store`));
    }
    const t = await storeCheck(text);
    expect(t).toMatchObject({ code: 2, stdout: "" });
    expect(t.stderr).toMatch(/^store\.check: /);
    expect(t.stderr).toContain(text);
    expect(t.stderr).not.toContain("MOSOO_DB_FILE");
  }, 60_000);
});
