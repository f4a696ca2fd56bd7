import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { newUlid } from "@mosoo/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqliteStore, type SqliteStore as Store } from "../src/platform/db/sqlite/sqlite-store.js";
import { createLegacyStore, migrationsFolderUpTo, type LegacyIds } from "./helpers/reconciliation-legacy-store.js";
import { START_MS } from "./kit/index.js";

const T0 = START_MS - 3_600_000;
let dir: string;
let file: string;
let ids: LegacyIds;
let store: Store | undefined;

/** A store as migration 0004 left it, with three audit rows on its unknown effect. */
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "mosoo-migrate-0005-"));
  file = join(dir, "mosoo.db");
  ids = createLegacyStore(dir, file, T0);
  const sqlite = new Database(file);
  sqlite.pragma("foreign_keys = OFF");
  migrate(drizzle(sqlite), { migrationsFolder: migrationsFolderUpTo(dir, 4) });
  const audit = sqlite.prepare(
    "INSERT INTO effect_operator_actions (id, effect_id, action, actor, reason, outcome, created_at_ms) VALUES (?, ?, ?, 'alice', 'r', ?, ?)",
  );
  audit.run(newUlid(T0), ids.unknownEffectId, "lookup", "still_unknown", T0);
  audit.run(newUlid(T0), ids.unknownEffectId, "lookup", "confirmed_not_executed", T0);
  audit.run(newUlid(T0), ids.succeededEffectId, "resolve", "succeeded", T0);
  sqlite.close();
});
afterEach(() => {
  store?.closeNow();
  store = undefined;
  rmSync(dir, { recursive: true, force: true });
});

describe("store migration 0005 (compensation link, audit status before/after)", () => {
  it("keeps every audit row and backfills status before (unknown) and after (from the recorded outcome)", () => {
    store = openSqliteStore(file);
    const rows = store.sqlite
      .prepare(
        "SELECT action, outcome, status_before, status_after, receipt_json, compensation_effect_id FROM effect_operator_actions ORDER BY id",
      )
      .all();
    expect(rows).toEqual([
      {
        action: "lookup",
        outcome: "still_unknown",
        status_before: "unknown",
        status_after: "unknown",
        receipt_json: null,
        compensation_effect_id: null,
      },
      {
        action: "lookup",
        outcome: "confirmed_not_executed",
        status_before: "unknown",
        status_after: "not_executed",
        receipt_json: null,
        compensation_effect_id: null,
      },
      {
        action: "resolve",
        outcome: "succeeded",
        status_before: "unknown",
        status_after: "succeeded",
        receipt_json: null,
        compensation_effect_id: null,
      },
    ]);
    expect(store.sqlite.prepare("SELECT compensates_effect_id FROM external_tool_effects WHERE id = ?").get(ids.succeededEffectId)).toEqual(
      { compensates_effect_id: null },
    );
  });

  it("the new rules hold in the database (after 0007): only a compensate row names a compensation, statuses are checked, one compensation in flight per effect", () => {
    store = openSqliteStore(file);
    const db = store.sqlite;
    const insertAction = (action: string, statusAfter: string, compensationId: string | null) =>
      db
        .prepare(
          "INSERT INTO effect_operator_actions (id, effect_id, action, actor, reason, outcome, status_before, status_after, compensation_effect_id, created_at_ms) VALUES (?, ?, ?, 'a', 'r', 'x', 'succeeded', ?, ?, 1)",
        )
        .run(newUlid(), ids.succeededEffectId, action, statusAfter, compensationId);
    expect(() => insertAction("lookup", "succeeded", ids.unknownEffectId)).toThrow(/CHECK constraint failed/); // only a compensate row names a compensation
    expect(() => insertAction("lookup", "lost", null)).toThrow(/CHECK constraint failed/);
    expect(() => insertAction("undo", "succeeded", null)).toThrow(/CHECK constraint failed/);
    // two compensations of one effect in flight (executing / unknown): the partial unique index refuses the second
    const link = db.prepare("UPDATE external_tool_effects SET compensates_effect_id = ? WHERE id = ?");
    link.run(ids.succeededEffectId, ids.unknownEffectId);
    const cmd = newUlid();
    const comp = newUlid();
    db.prepare(
      "INSERT INTO driver_commands (id, driver_instance_id, run_id, seq, type, status, payload_json, created_at_ms, updated_at_ms) VALUES (?, ?, ?, 3, 'mcp.execute', 'queued', '{}', 1, 1)",
    ).run(cmd, ids.driverId, ids.runId);
    const insertComp = () =>
      db
        .prepare(
          "INSERT INTO external_tool_effects (id, command_id, run_id, driver_instance_id, server_id, tool_name, tool_call_id, request_id, arguments_json, idempotency_key, request_fingerprint, status, attempt_count, compensates_effect_id, created_at_ms, updated_at_ms) VALUES (?, ?, ?, ?, 'tracker', 'closeIssue', 'tc', 'rq', '{}', ?, ?, 'executing', 1, ?, 1, 1)",
        )
        .run(comp, cmd, ids.runId, ids.driverId, newUlid(), "0".repeat(64), ids.succeededEffectId);
    expect(insertComp).toThrow(/UNIQUE constraint failed/);
    // once the first is confirmed not executed, another may exist
    db.prepare("UPDATE external_tool_effects SET status = 'not_executed', resolution = 'operator' WHERE id = ?").run(ids.unknownEffectId);
    expect(insertComp).not.toThrow();
  });

  it("the fence trigger survives: an unknown effect still cannot be deleted", () => {
    store = openSqliteStore(file);
    expect(() => store!.sqlite.prepare("DELETE FROM external_tool_effects WHERE id = ?").run(ids.unknownEffectId)).toThrow();
    expect(store.sqlite.prepare("SELECT status FROM external_tool_effects WHERE id = ?").get(ids.unknownEffectId)).toEqual({
      status: "unknown",
    });
  });
});
