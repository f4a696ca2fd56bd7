/**
 * The soak's read-only views of the two sides it compares: the
 * API's ledger (the SQLite file, or the PostgreSQL database of `--store postgres`; the same table and
 * column names in both dialects) and the fixture provider's SQLite file.
 */
import Database from "better-sqlite3";
import pg from "pg";
import type { LedgerEffect, ProviderTruth } from "./soak-counts.js";
import type { LedgerAttempt } from "./soak-verdicts.js";

/** Reads the ledger after (and while) the soak ran. */
export interface LedgerReader {
  /** Commands without a terminal receipt + effects `executing` + effects `unknown` still due for a lookup (no operator attention). */
  pending(): Promise<number>;
  /** Every effect (`external_tool_effects`): id, key, status, resolution, stored result JSON. */
  effects(): Promise<LedgerEffect[]>;
  /** Every attempt with its effect's key, Driver instance, status and resolution, ordered by effect and attempt. */
  attempts(): Promise<LedgerAttempt[]>;
  /** The finalized Driver instances: id and `finalized_at_ms` (ms since the epoch). */
  finalizedDrivers(): Promise<Array<{ id: string; finalizedAtMs: number }>>;
  close(): Promise<void>;
}

const PENDING_SQL = `SELECT (SELECT count(*) FROM driver_commands WHERE status IN ('queued','delivered','accepted'))
  + (SELECT count(*) FROM external_tool_effects WHERE status = 'executing')
  + (SELECT count(*) FROM external_tool_effects WHERE status = 'unknown' AND next_lookup_at_ms IS NOT NULL AND operator_attention IS NULL) AS n`;
const EFFECTS_SQL = "SELECT id, idempotency_key, status, resolution, result_json FROM external_tool_effects";

const ATTEMPTS_SQL = `SELECT a.effect_id, e.idempotency_key, e.driver_instance_id, e.status AS effect_status, e.resolution AS effect_resolution,
  a.status, a.started_at_ms, a.finished_at_ms
  FROM external_tool_effect_attempts a JOIN external_tool_effects e ON e.id = a.effect_id ORDER BY a.effect_id, a.attempt`;
const FINALIZED_SQL = "SELECT id, finalized_at_ms FROM driver_instances WHERE status = 'finalized'";

function toAttempt(r: Record<string, unknown>): LedgerAttempt {
  return {
    effectId: String(r["effect_id"]),
    idempotencyKey: String(r["idempotency_key"]),
    driverInstanceId: String(r["driver_instance_id"]),
    effectStatus: String(r["effect_status"]),
    effectResolution: r["effect_resolution"] === null ? null : String(r["effect_resolution"]),
    status: String(r["status"]),
    startedAtMs: Number(r["started_at_ms"]),
    finishedAtMs: r["finished_at_ms"] === null ? null : Number(r["finished_at_ms"]),
  };
}

function toFinalized(r: Record<string, unknown>): { id: string; finalizedAtMs: number } {
  return { id: String(r["id"]), finalizedAtMs: Number(r["finalized_at_ms"]) };
}

function toEffect(r: Record<string, unknown>): LedgerEffect {
  const text = (v: unknown) => (v === null || v === undefined ? null : typeof v === "string" ? v : JSON.stringify(v));
  return {
    id: String(r["id"]),
    idempotencyKey: String(r["idempotency_key"]),
    status: String(r["status"]),
    resolution: text(r["resolution"]),
    resultJson: text(r["result_json"]),
  };
}

/**
 * Opens the ledger at `store`: a SQLite file path (read-only), or `{ databaseUrl }` (one `pg` client).
 * @throws Error when the file or the server cannot be opened.
 */
export async function openLedgerReader(store: string | { databaseUrl: string }): Promise<LedgerReader> {
  if (typeof store === "string") {
    const db = new Database(store, { readonly: true });
    return {
      pending: async () => (db.prepare(PENDING_SQL).get() as { n: number }).n,
      effects: async () => (db.prepare(EFFECTS_SQL).all() as Array<Record<string, unknown>>).map(toEffect),
      attempts: async () => (db.prepare(ATTEMPTS_SQL).all() as Array<Record<string, unknown>>).map(toAttempt),
      finalizedDrivers: async () => (db.prepare(FINALIZED_SQL).all() as Array<Record<string, unknown>>).map(toFinalized),
      close: async () => void db.close(),
    };
  }
  const client = new pg.Client({ connectionString: store.databaseUrl, application_name: "mosoo-soak" });
  await client.connect();
  return {
    pending: async () => Number((await client.query<{ n: string | number }>(PENDING_SQL)).rows[0]!.n),
    effects: async () => (await client.query<Record<string, unknown>>(EFFECTS_SQL)).rows.map(toEffect),
    attempts: async () => (await client.query<Record<string, unknown>>(ATTEMPTS_SQL)).rows.map(toAttempt),
    finalizedDrivers: async () => (await client.query<Record<string, unknown>>(FINALIZED_SQL)).rows.map(toFinalized),
    close: () => client.end(),
  };
}

/** The provider's ground truth per idempotency key, from its SQLite file (read-only); `close()` it. */
export function openProviderTruth(providerDb: string): { of: (key: string) => ProviderTruth; close: () => void } {
  const truthDb = new Database(providerDb, { readonly: true });
  const commitsOf = truthDb.prepare("SELECT count(*) AS n FROM issues WHERE idempotency_key = ?");
  const callsOf = truthDb.prepare("SELECT count FROM call_counts WHERE idempotency_key = ? AND kind = 'create'");
  const resultOf = truthDb.prepare("SELECT result_json FROM operations WHERE idempotency_key = ?");
  const of = (key: string): ProviderTruth => {
    const result = resultOf.get(key) as { result_json: string } | undefined;
    const content = result ? ((JSON.parse(result.result_json) as { content?: Array<{ type: string; text?: string }> }).content ?? []) : [];
    return {
      commits: (commitsOf.get(key) as { n: number }).n,
      createCalls: (callsOf.get(key) as { count: number } | undefined)?.count ?? 0,
      outputText: result
        ? content
            .filter((c) => c.type === "text" && typeof c.text === "string")
            .map((c) => c.text)
            .join("\n")
        : null,
    };
  };
  return { of, close: () => truthDb.close() };
}
