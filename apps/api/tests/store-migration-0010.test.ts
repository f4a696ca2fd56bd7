/**
 * Migration 0010 (audit rows outlive runs, docs/DESIGN.md §7): `effect_operator_actions` loses its foreign
 * keys and gains `run_id` and `driver_instance_id`, copied from the effect for the rows it already has.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { newUlid } from "@mosoo/contracts";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore, type SqliteStore as Store } from "../src/platform/db/sqlite/sqlite-store.js";
import { createLegacyStore, migrationsFolderUpTo } from "./helpers/reconciliation-legacy-store.js";
import { START_MS } from "./kit/index.js";

const T0 = START_MS - 3_600_000;
let dir: string | undefined;
let store: Store | undefined;
afterEach(() => {
  store?.closeNow();
  store = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("store migration 0010 (audit rows without foreign keys)", () => {
  it("copies run and Driver ids into existing audit rows; deleting their effect then keeps them", () => {
    dir = mkdtempSync(join(tmpdir(), "mosoo-migrate-0010-"));
    const file = join(dir, "mosoo.db");
    const ids = createLegacyStore(dir, file, T0);
    const sqlite = new Database(file);
    sqlite.pragma("foreign_keys = OFF");
    migrate(drizzle(sqlite), { migrationsFolder: migrationsFolderUpTo(dir, 7) });
    const effect = sqlite
      .prepare("SELECT run_id, driver_instance_id FROM external_tool_effects WHERE id = ?")
      .get(ids.succeededEffectId) as { run_id: string; driver_instance_id: string };
    const auditId = newUlid(T0);
    sqlite
      .prepare(
        "INSERT INTO effect_operator_actions (id, effect_id, action, actor, reason, outcome, status_before, status_after, created_at_ms) VALUES (?, ?, 'resolve', 'alice', 'r', 'succeeded', 'unknown', 'succeeded', ?)",
      )
      .run(auditId, ids.succeededEffectId, T0);
    // an audit row whose effect is already gone (written with foreign keys off): kept, with null ids
    sqlite
      .prepare(
        "INSERT INTO effect_operator_actions (id, effect_id, action, actor, reason, outcome, status_before, status_after, created_at_ms) VALUES (?, '01JDZZZZZZZZZZZZZZZZZZZZZZ', 'lookup', 'bob', 'r', 'still_unknown', 'unknown', 'unknown', ?)",
      )
      .run(newUlid(T0 + 1), T0);
    sqlite.close();

    store = openSqliteStore(file);
    const rows = () =>
      store!.sqlite.prepare("SELECT effect_id, run_id, driver_instance_id, actor FROM effect_operator_actions ORDER BY id").all();
    expect(rows()).toEqual([
      { effect_id: ids.succeededEffectId, run_id: effect.run_id, driver_instance_id: effect.driver_instance_id, actor: "alice" },
      { effect_id: "01JDZZZZZZZZZZZZZZZZZZZZZZ", run_id: null, driver_instance_id: null, actor: "bob" },
    ]);
    expect(store.sqlite.prepare("PRAGMA foreign_key_list(effect_operator_actions)").all()).toEqual([]);
    // (the legacy run also holds an unknown effect, so the run itself keeps its fence)
    store.sqlite.prepare("DELETE FROM driver_commands WHERE id = ?").run(ids.succeededCommandId);
    expect(store.sqlite.prepare("SELECT count(*) AS n FROM external_tool_effects WHERE id = ?").get(ids.succeededEffectId)).toEqual({
      n: 0,
    });
    expect(rows()).toHaveLength(2);
  });
});
