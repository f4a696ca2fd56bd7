/**
 * Migration 0023 (trace context on the command, docs/OPERATIONS.md "Traces"): `driver_commands` gains
 * `trace_parent` and `trace_state` with their CHECKs; the table is rebuilt, every row is kept (the new
 * columns empty) and its indexes are back.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore, type SqliteStore as Store } from "../src/platform/db/sqlite/sqlite-store.js";
import { createLegacyStore, migrationsFolderUpTo } from "./helpers/reconciliation-legacy-store.js";
import { START_MS } from "./kit/index.js";

let dir: string | undefined;
let store: Store | undefined;
afterEach(() => {
  store?.closeNow();
  store = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const TRACE_PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

describe("store migration 0023 (trace context on driver_commands)", () => {
  it("keeps every command, leaves the trace columns empty, checks them, and keeps the indexes", () => {
    dir = mkdtempSync(join(tmpdir(), "mosoo-migrate-0023-"));
    const file = join(dir, "mosoo.db");
    createLegacyStore(dir, file, START_MS - 3_600_000);
    const sqlite = new Database(file);
    sqlite.pragma("foreign_keys = OFF");
    migrate(drizzle(sqlite), { migrationsFolder: migrationsFolderUpTo(dir, 22) });
    const before = sqlite.prepare("SELECT * FROM driver_commands ORDER BY id").all();
    sqlite.close();
    expect(before.length).toBeGreaterThan(0);

    store = openSqliteStore(file);
    const s = store.sqlite;
    const after = s.prepare("SELECT * FROM driver_commands ORDER BY id").all() as Array<Record<string, unknown>>;
    expect(after.map(({ trace_parent: _p, trace_state: _s, ...rest }) => rest)).toEqual(before);
    expect(after.every((r) => r["trace_parent"] === null && r["trace_state"] === null)).toBe(true);
    const id = (before[0] as { id: string }).id;
    expect(() => s.prepare("UPDATE driver_commands SET trace_parent = 'x' WHERE id = ?").run(id)).toThrow(
      /driver_commands_trace_parent_check/,
    );
    expect(() => s.prepare("UPDATE driver_commands SET trace_state = 'a=b' WHERE id = ?").run(id)).toThrow(
      /driver_commands_trace_state_check/,
    );
    s.prepare("UPDATE driver_commands SET trace_parent = ?, trace_state = 'a=b' WHERE id = ?").run(TRACE_PARENT, id);
    const indexes = s
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'driver_commands' AND name NOT LIKE 'sqlite_%' ORDER BY name",
      )
      .all();
    // the rebuild's indexes are back (later migrations may add more, e.g. the open-command index)
    expect(indexes).toEqual(expect.arrayContaining([{ name: "driver_commands_instance_seq" }, { name: "driver_commands_run_idx" }]));
  });
});
