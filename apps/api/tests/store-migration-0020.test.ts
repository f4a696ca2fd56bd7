/**
 * Migration 0020 (the repeat guard, docs/DESIGN.md §3 rule 17): `external_tool_effects` gains `session_id`
 * (filled from each effect's run for the rows it already has) and `repeat_of_effect_id`, a CHECK on it
 * and the (session_id, request_fingerprint) index; the table is rebuilt, and the fence trigger survives it.
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

describe("store migration 0020 (session and deliberate repeat on effects)", () => {
  it("fills session_id from the run, keeps every row and the fence trigger, and checks repeat_of_effect_id", () => {
    dir = mkdtempSync(join(tmpdir(), "mosoo-migrate-0020-"));
    const file = join(dir, "mosoo.db");
    const ids = createLegacyStore(dir, file, START_MS - 3_600_000);
    const sqlite = new Database(file);
    sqlite.pragma("foreign_keys = OFF");
    migrate(drizzle(sqlite), { migrationsFolder: migrationsFolderUpTo(dir, 19) });
    const before = sqlite.prepare("SELECT id, status, version FROM external_tool_effects ORDER BY id").all();
    sqlite.close();

    store = openSqliteStore(file);
    const s = store.sqlite;
    expect(s.prepare("SELECT id, status, version FROM external_tool_effects ORDER BY id").all()).toEqual(before);
    expect(s.prepare("SELECT DISTINCT session_id FROM external_tool_effects").all()).toEqual([{ session_id: ids.sessionId }]);
    expect(s.prepare("SELECT count(*) AS n FROM external_tool_effects WHERE repeat_of_effect_id IS NOT NULL").get()).toEqual({ n: 0 });
    // the fence trigger is back: an unknown effect cannot be deleted
    expect(() => s.prepare("DELETE FROM external_tool_effects WHERE id = ?").run(ids.unknownEffectId)).toThrow(/effect.fence_retained/);
    // the CHECK: an effect is never a repeat of itself, and the id is a ULID
    expect(() => s.prepare("UPDATE external_tool_effects SET repeat_of_effect_id = id WHERE id = ?").run(ids.succeededEffectId)).toThrow(
      /external_tool_effects_repeat_of_check/,
    );
    expect(() => s.prepare("UPDATE external_tool_effects SET repeat_of_effect_id = 'x' WHERE id = ?").run(ids.succeededEffectId)).toThrow(
      /external_tool_effects_repeat_of_check/,
    );
    expect(
      s.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'external_tool_effects_session_fingerprint_idx'").get(),
    ).toEqual({ name: "external_tool_effects_session_fingerprint_idx" });
  });
});
