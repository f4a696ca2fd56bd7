import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { newUlid } from "@mosoo/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MIGRATIONS_FOLDER, openSqliteStore, type SqliteStore as Store } from "../src/platform/db/sqlite/sqlite-store.js";
import { columnsOf, createLegacyStore, dumpLegacyRows, type LegacyIds } from "./helpers/reconciliation-legacy-store.js";
import { createDoubleWorld, START_MS } from "./kit/index.js";
import { effectRow, expectReconciled, reconciliationRecords } from "./helpers/reconciliation-db.js";
import { commandRepository } from "../src/modules/drivers/infrastructure/command.repository.js";
import { runRepository } from "../src/modules/runs/infrastructure/run.repository.js";

/** Every migration of the journal (0000 … latest) must have been applied. */
const MIGRATION_COUNT = (JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, "meta", "_journal.json"), "utf8")) as { entries: unknown[] })
  .entries.length;

const T0 = START_MS - 3_600_000;
let dir: string;
let file: string;
let ids: LegacyIds;
let before: Record<string, unknown[]>;
let legacyColumns: Record<string, string[]>;
const opened: Array<{ close(): unknown }> = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "mosoo-migrate-"));
  file = join(dir, "mosoo.db");
  ids = createLegacyStore(dir, file, T0);
  const legacy = new Database(file, { readonly: true });
  legacyColumns = columnsOf(legacy);
  before = dumpLegacyRows(legacy, legacyColumns);
  legacy.close();
});
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  rmSync(dir, { recursive: true, force: true });
});
function upgrade(): Store {
  const store = openSqliteStore(file);
  opened.push(store);
  return store;
}

describe("store migration 0002 (effect reconciliation) on a pre-reconciliation store", () => {
  it("the legacy store is what 0000 + 0001 build: no reconciliation columns or table yet", () => {
    expect(legacyColumns["external_tool_effects"]).not.toContain("resolution");
    const legacy = new Database(file, { readonly: true });
    try {
      expect(legacy.prepare("SELECT count(*) AS n FROM __drizzle_migrations").get()).toEqual({ n: 2 });
      expect(legacy.prepare("SELECT name FROM sqlite_master WHERE name = 'effect_reconciliations'").all()).toEqual([]);
      expect(before["external_tool_effects"]).toHaveLength(2);
      expect(before["external_tool_effect_attempts"]).toHaveLength(2);
    } finally {
      legacy.close();
    }
  });

  it("keeps every row and attempt; a succeeded effect gets resolution provider_result; all start at version 0", () => {
    const store = upgrade();
    expect(store.sqlite.prepare("SELECT count(*) AS n FROM __drizzle_migrations").get()).toEqual({ n: MIGRATION_COUNT });
    expect(dumpLegacyRows(store.sqlite, legacyColumns)).toEqual(before);
    expect(effectRow(store, ids.succeededEffectId)).toMatchObject({
      status: "succeeded",
      resolution: "provider_result",
      version: 0,
      attempt_count: 1,
      reconciliation_receipt_json: null,
      lookup_count: 0,
      next_lookup_at_ms: null,
      operator_attention: null,
      lease_owner: null,
    });
    expect(effectRow(store, ids.unknownEffectId)).toMatchObject({
      status: "unknown",
      resolution: null,
      version: 0,
      attempt_count: 1,
      lookup_count: 0,
      next_lookup_at_ms: null,
      lease_owner: null,
    });
    expect(store.sqlite.pragma("foreign_key_check")).toEqual([]);
    expect(store.sqlite.pragma("foreign_keys", { simple: true })).toBe(1);
    expect(store.sqlite.pragma("integrity_check", { simple: true })).toBe("ok");
  });

  it("the fence trigger survives the table rebuild: an unknown effect cannot be deleted, directly or by cascade", () => {
    const store = upgrade();
    const triggers = store.sqlite
      .prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'external_tool_effects' ORDER BY name")
      .all();
    // the later task-handle migration adds the set-once trigger of the task id next to it, and 0029 the dispatch trigger (an attempt row per dispatch)
    expect(triggers).toEqual([
      { name: "external_tool_effects_attempt_on_dispatch" },
      { name: "external_tool_effects_fence_retained" },
      { name: "external_tool_effects_task_id_set_once" },
    ]);
    expect(() => store.sqlite.prepare("DELETE FROM external_tool_effects WHERE id = ?").run(ids.unknownEffectId)).toThrow(
      /effect\.fence_retained/,
    );
    expect(() => store.sqlite.prepare("DELETE FROM session_runs WHERE id = ?").run(ids.runId)).toThrow(/effect\.fence_retained/);
    expect(() => store.sqlite.prepare("DELETE FROM driver_instances WHERE id = ?").run(ids.driverId)).toThrow(/effect\.fence_retained/);
    expect(dumpLegacyRows(store.sqlite, legacyColumns)).toEqual(before);
    // a settled effect may go, its attempts with it (the cascade still works after the rebuild)
    store.sqlite.prepare("DELETE FROM external_tool_effects WHERE id = ?").run(ids.succeededEffectId);
    expect(
      store.sqlite.prepare("SELECT count(*) AS n FROM external_tool_effect_attempts WHERE effect_id = ?").get(ids.succeededEffectId),
    ).toEqual({ n: 0 });
  });

  it("the new CHECKs and the partial unique index hold", () => {
    const store = upgrade();
    const db = store.sqlite;
    const setStatus = (status: string, resolution: string | null) =>
      db.prepare("UPDATE external_tool_effects SET status = ?, resolution = ? WHERE id = ?").run(status, resolution, ids.unknownEffectId);
    expect(() => setStatus("not_executed", null)).toThrow(/CHECK constraint failed/);
    expect(() => setStatus("unknown", "operator")).toThrow(/CHECK constraint failed/);
    expect(() => setStatus("not_executed", "guessed")).toThrow(/CHECK constraint failed/);
    expect(() => db.prepare("UPDATE external_tool_effects SET lease_owner = 'x' WHERE id = ?").run(ids.unknownEffectId)).toThrow(
      /CHECK constraint failed/,
    );
    expect(() => db.prepare("UPDATE external_tool_effects SET operator_attention = 'bored' WHERE id = ?").run(ids.unknownEffectId)).toThrow(
      /CHECK constraint failed/,
    );
    expect(effectRow(store, ids.unknownEffectId)).toMatchObject({
      status: "unknown",
      resolution: null,
      lease_owner: null,
      operator_attention: null,
    });

    const record = db.prepare(
      "INSERT INTO effect_reconciliations (id, effect_id, adapter_id, adapter_version, trigger, outcome, reason_code, receipt_json, result_json, started_at_ms, finished_at_ms) VALUES (?, ?, 'a', '1.0.0', 'sweep', ?, ?, ?, ?, 1, 2)",
    );
    const receipt = JSON.stringify({ observedAt: "2026-11-29T12:00:00Z" });
    record.run(newUlid(), ids.unknownEffectId, "still_unknown", "adapter_error", null, null);
    record.run(newUlid(), ids.unknownEffectId, "still_unknown", "lookup_timeout", null, null);
    record.run(newUlid(), ids.unknownEffectId, "confirmed_not_executed", null, receipt, null);
    expect(() => record.run(newUlid(), ids.unknownEffectId, "confirmed_succeeded", null, receipt, "{}")).toThrow(
      /UNIQUE constraint failed/,
    );
    expect(() => record.run(newUlid(), ids.unknownEffectId, "confirmed_not_executed", null, receipt, null)).toThrow(
      /UNIQUE constraint failed/,
    );
    expect(() => record.run(newUlid(), ids.succeededEffectId, "confirmed_succeeded", null, receipt, null)).toThrow(
      /CHECK constraint failed/,
    );
    expect(() => record.run(newUlid(), ids.succeededEffectId, "confirmed_not_executed", null, null, null)).toThrow(
      /CHECK constraint failed/,
    );
    expect(() => record.run(newUlid(), newUlid(), "still_unknown", "adapter_error", null, null)).toThrow(/FOREIGN KEY constraint failed/);
    expect(reconciliationRecords(store, ids.unknownEffectId)).toHaveLength(3);
  });

  it("reopening an upgraded store changes nothing; the upgraded unknown effect is reconciled by the sweep", async () => {
    await upgrade().close();
    opened.splice(0);
    const again = upgrade();
    expect(again.sqlite.prepare("SELECT count(*) AS n FROM __drizzle_migrations").get()).toEqual({ n: MIGRATION_COUNT });
    expect(dumpLegacyRows(again.sqlite, legacyColumns)).toEqual(before);
    await again.close();
    opened.splice(0);

    const fx = createDoubleWorld({ dbFile: file });
    opened.push(fx);
    expect(await fx.runtime.sweep.sweepOnce()).toMatchObject({ effectsLookedUp: 1, effectsResolved: 1 });
    expect(fx.lookups.map((r) => r.idempotencyKey)).toEqual([ids.unknownKey]);
    expectReconciled(fx.store, ids.runId, ids.unknownEffectId, "not_executed");
    expect(effectRow(fx.store, ids.succeededEffectId)).toMatchObject({ status: "succeeded", resolution: "provider_result", version: 0 });
  });
});

describe("migrations 0017 (sequence counters) and 0027 (SQLite numbers run events inside the INSERT)", () => {
  it("backfills each instance's counter; zeroes the run's counter, which SQLite no longer keeps; numbering continues after the rows already numbered", async () => {
    const store = upgrade();
    expect(store.sqlite.prepare("SELECT last_command_seq AS n FROM driver_instances WHERE id = ?").get(ids.driverId)).toEqual({ n: 2 });
    expect(store.sqlite.prepare("SELECT last_event_seq AS n FROM session_runs WHERE id = ?").get(ids.runId)).toEqual({ n: 0 });
    const next = await store.transaction(async (tx) => ({
      command: (
        await commandRepository.insertNumbered(tx, {
          id: newUlid(START_MS),
          driverInstanceId: ids.driverId,
          runId: ids.runId,
          type: "mcp.execute",
          status: "queued",
          payloadJson: "{}",
          createdAtMs: START_MS,
          updatedAtMs: START_MS,
        })
      ).seq,
      events: [
        (await runRepository.appendEvent(tx, ids.runId, "tool_call.queued", {}, START_MS)).seq,
        (await runRepository.appendEvent(tx, ids.runId, "tool_call.queued", {}, START_MS)).seq,
      ],
    }));
    expect(next).toEqual({ command: 3, events: [6, 7] });
    expect(store.sqlite.prepare("SELECT last_command_seq AS n FROM driver_instances WHERE id = ?").get(ids.driverId)).toEqual({ n: 3 });
    expect(store.sqlite.prepare("SELECT seq FROM run_events WHERE run_id = ? ORDER BY seq").pluck().all(ids.runId)).toEqual([
      1, 2, 3, 4, 5, 6, 7,
    ]);
    expect(store.sqlite.prepare("SELECT last_event_seq AS n FROM session_runs WHERE id = ?").get(ids.runId)).toEqual({ n: 0 });
  });
});

describe("migration 0028 (run events and attempts WITHOUT ROWID)", () => {
  it("rebuilds both tables WITHOUT ROWID with their rows, unique indexes and cascades", () => {
    const store = upgrade();
    const sqlOf = (name: string) =>
      store.sqlite.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?").pluck().get(name);
    for (const table of ["run_events", "external_tool_effect_attempts"]) expect(sqlOf(table)).toMatch(/\)\s*WITHOUT ROWID$/);
    const count = (table: string) => store.sqlite.prepare(`SELECT count(*) FROM ${table}`).pluck().get();
    expect(count("run_events")).toBe(before.run_events!.length);
    expect(count("external_tool_effect_attempts")).toBe(before.external_tool_effect_attempts!.length);
    const indexes = store.sqlite
      .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'run_events' ORDER BY name")
      .pluck()
      .all();
    expect(indexes).toEqual(["run_events_one_terminal", "run_events_run_seq"]);
    const seq = store.sqlite.prepare("SELECT seq FROM run_events WHERE run_id = ? ORDER BY seq LIMIT 1").pluck().get(ids.runId);
    expect(() =>
      store.sqlite
        .prepare(
          "INSERT INTO run_events (id, run_id, seq, type, terminal, payload_json, created_at_ms) VALUES (?, ?, ?, 'tool_call.queued', 0, '{}', 0)",
        )
        .run(newUlid(T0), ids.runId, seq),
    ).toThrow(/UNIQUE/);
    // the cascade from the effects still reaches the attempts (the succeeded effect holds no fence)
    store.sqlite.prepare("DELETE FROM external_tool_effects WHERE id = ?").run(ids.succeededEffectId);
    expect(
      store.sqlite.prepare("SELECT count(*) FROM external_tool_effect_attempts WHERE effect_id = ?").pluck().get(ids.succeededEffectId),
    ).toBe(0);
  });
});
