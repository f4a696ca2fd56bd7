import { expect } from "vitest";
import type { SqliteStore as Store } from "../../src/platform/db/sqlite/sqlite-store.js";

/** An `external_tool_effects` row as stored (snake_case columns). */
export interface EffectDbRow {
  id: string;
  status: string;
  resolution: string | null;
  version: number;
  attempt_count: number;
  result_json: string | null;
  provider_receipt_json: string | null;
  reconciliation_receipt_json: string | null;
  lease_owner: string | null;
  lease_expires_at_ms: number | null;
  next_lookup_at_ms: number | null;
  lookup_count: number;
  operator_attention: string | null;
  first_dispatched_at_ms: number | null;
  last_dispatched_at_ms: number | null;
}

/** An `effect_reconciliations` row as stored. */
export interface RecordDbRow {
  id: string;
  effect_id: string;
  adapter_id: string;
  adapter_version: string;
  trigger: string;
  outcome: string;
  reason_code: string | null;
  receipt_json: string | null;
  result_json: string | null;
  error: string | null;
  started_at_ms: number;
  finished_at_ms: number;
  next_lookup_at_ms: number | null;
}

export function effectRow(store: Store, effectId: string): EffectDbRow {
  const row = store.sqlite.prepare("SELECT * FROM external_tool_effects WHERE id = ?").get(effectId) as EffectDbRow | undefined;
  if (!row) throw new Error(`no effect ${effectId}`);
  return row;
}

export function reconciliationRecords(store: Store, effectId: string): RecordDbRow[] {
  return store.sqlite.prepare("SELECT * FROM effect_reconciliations WHERE effect_id = ? ORDER BY id").all(effectId) as RecordDbRow[];
}

export function commandRow(
  store: Store,
  commandId: string,
): { status: string; error: { code: string; details: Record<string, unknown> } | null; result: unknown } {
  const row = store.sqlite.prepare("SELECT status, error_json, result_json FROM driver_commands WHERE id = ?").get(commandId) as
    { status: string; error_json: string | null; result_json: string | null } | undefined;
  if (!row) throw new Error(`no command ${commandId}`);
  return {
    status: row.status,
    error: row.error_json ? JSON.parse(row.error_json) : null,
    result: row.result_json ? JSON.parse(row.result_json) : null,
  };
}

export function runEvents(store: Store, runId: string, type?: string): Array<{ type: string; payload: Record<string, unknown> }> {
  const rows = store.sqlite.prepare("SELECT type, payload_json FROM run_events WHERE run_id = ? ORDER BY seq").all(runId) as Array<{
    type: string;
    payload_json: string;
  }>;
  return rows
    .filter((r) => type === undefined || r.type === type)
    .map((r) => ({ type: r.type, payload: JSON.parse(r.payload_json) as Record<string, unknown> }));
}

/**
 * Asserts the fail-closed shape after one refused lookup: still `unknown`, nothing resolved or
 * stored as proof, exactly one `still_unknown` record with `reasonCode`, and the effect's schedule
 * equal to the record's. Returns the effect row.
 */
export function expectStillUnknown(store: Store, effectId: string, reasonCode: string, trigger: string): EffectDbRow {
  const effect = effectRow(store, effectId);
  expect(effect).toMatchObject({
    status: "unknown",
    resolution: null,
    result_json: null,
    reconciliation_receipt_json: null,
    lease_owner: null,
    lookup_count: 1,
  });
  const records = reconciliationRecords(store, effectId);
  expect(records).toHaveLength(1);
  expect(records[0]).toMatchObject({
    outcome: "still_unknown",
    reason_code: reasonCode,
    trigger,
    adapter_id: "provider-double",
    adapter_version: "1.0.0",
    result_json: null,
  });
  expect(records[0]!.next_lookup_at_ms).toBe(effect.next_lookup_at_ms);
  return effect;
}

/**
 * Asserts a confirmed outcome was persisted: `status`, resolution `reconciled`, the receipt on the
 * effect, one confirmed record with the same receipt, and an `effect.reconciled` run event.
 */
export function expectReconciled(store: Store, runId: string, effectId: string, status: "succeeded" | "not_executed") {
  const effect = effectRow(store, effectId);
  expect(effect).toMatchObject({ status, resolution: "reconciled", next_lookup_at_ms: null, operator_attention: null, lease_owner: null });
  expect(effect.reconciliation_receipt_json).not.toBeNull();
  const receipt = JSON.parse(effect.reconciliation_receipt_json!) as Record<string, unknown>;
  expect(receipt.observedAt).toEqual(expect.any(String));
  const outcome = status === "succeeded" ? "confirmed_succeeded" : "confirmed_not_executed";
  const confirmed = reconciliationRecords(store, effectId).filter((r) => r.outcome === outcome);
  expect(confirmed).toHaveLength(1);
  expect(JSON.parse(confirmed[0]!.receipt_json!)).toEqual(receipt);
  const events = runEvents(store, runId, "effect.reconciled").filter((e) => e.payload.outcome === outcome);
  expect(events).toHaveLength(1);
  expect(events[0]!.payload).toMatchObject({ effectId, effectStatus: status, adapter: { id: "provider-double", version: "1.0.0" } });
  return { effect, receipt, record: confirmed[0]! };
}

/**
 * Everything an operator action could change, as one comparable value: every effect (id, status,
 * version, resolution), every command (id, status), the audit rows, run events and reconciliation
 * records (counts). Two equal snapshots mean nothing changed.
 */
export function ledgerSnapshot(store: Store): unknown {
  const all = (sql: string) => store.sqlite.prepare(sql).all();
  return {
    effects: all("SELECT id, status, version, resolution, compensates_effect_id FROM external_tool_effects ORDER BY id"),
    commands: all("SELECT id, status FROM driver_commands ORDER BY id"),
    counts: all(
      "SELECT (SELECT COUNT(*) FROM effect_operator_actions) AS actions, (SELECT COUNT(*) FROM run_events) AS events, (SELECT COUNT(*) FROM effect_reconciliations) AS lookups",
    ),
  };
}

/**
 * Every row of every table (SQLite's own and drizzle's migration bookkeeping left out, and the
 * tables named in `except`), as one JSON string: equal before and after a request means the request
 * changed nothing (the "byte-identical tables" check of the bad-input catalogue and auth matrices).
 */
export function dumpAllTables(sqlite: Store["sqlite"], except: readonly string[] = []): string {
  const tables = (
    sqlite
      .prepare(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '__drizzle%' ORDER BY name",
      )
      .all() as Array<{ name: string; sql: string }>
  ).filter(({ name }) => !except.includes(name));
  // A WITHOUT ROWID table (run events, attempts: migration 0028) has no rowid; its rows go by primary key.
  const orderOf = ({ name, sql }: { name: string; sql: string }) =>
    /WITHOUT\s+ROWID\s*$/i.test(sql)
      ? (sqlite.prepare(`PRAGMA table_info("${name}")`).all() as Array<{ name: string; pk: number }>)
          .filter((c) => c.pk > 0)
          .sort((a, b) => a.pk - b.pk)
          .map((c) => `"${c.name}"`)
          .join(", ")
      : "rowid";
  return JSON.stringify(tables.map((t) => [t.name, sqlite.prepare(`SELECT * FROM "${t.name}" ORDER BY ${orderOf(t)}`).all()]));
}
