import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { fingerprintArguments, newUlid } from "@mosoo/contracts";
import { MIGRATIONS_FOLDER } from "../../src/platform/db/sqlite/sqlite-store.js";

/** The tables every pre-reconciliation store has, in dependency order. */
const LEGACY_TABLES = [
  "driver_instances",
  "sessions",
  "session_runs",
  "driver_commands",
  "external_tool_effects",
  "external_tool_effect_attempts",
  "run_events",
] as const;

/** Ids of the rows {@link createLegacyStore} wrote. */
export interface LegacyIds {
  driverId: string;
  sessionId: string;
  runId: string;
  succeededCommandId: string;
  unknownCommandId: string;
  succeededEffectId: string;
  unknownEffectId: string;
  unknownKey: string;
}

/**
 * Copies migrations 0000 … `maxIdx` (and a journal trimmed to them) into `dir/migrations-<maxIdx>`,
 * and returns that folder: with `maxIdx` 1, a store migrated with it is what the baseline fence shipped.
 */
export function migrationsFolderUpTo(dir: string, maxIdx = 1): string {
  const folder = join(dir, `migrations-${maxIdx}`);
  mkdirSync(join(folder, "meta"), { recursive: true });
  const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, "meta/_journal.json"), "utf8")) as {
    entries: Array<{ idx: number; tag: string }>;
  };
  const entries = journal.entries.filter((e) => e.idx <= maxIdx);
  if (entries.length !== maxIdx + 1) throw new Error(`expected migrations 0000 … ${maxIdx} in the journal`);
  for (const e of entries) copyFileSync(join(MIGRATIONS_FOLDER, `${e.tag}.sql`), join(folder, `${e.tag}.sql`));
  writeFileSync(join(folder, "meta/_journal.json"), JSON.stringify({ ...journal, entries }));
  return folder;
}

/**
 * Creates `file` as a pre-reconciliation store (migrations 0000 + 0001, foreign keys off while migrating as
 * `openStore` does) holding, by raw SQL: a connected Driver instance, a session, an active run, a
 * completed command whose effect `succeeded` (one attempt, a result and a provider receipt), an
 * accepted command whose effect is `unknown` (one attempt), and run events. Closes it.
 */
export function createLegacyStore(dir: string, file: string, t0: number): LegacyIds {
  const sqlite = new Database(file);
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("foreign_keys = OFF");
  migrate(drizzle(sqlite), { migrationsFolder: migrationsFolderUpTo(dir, 1) });
  sqlite.pragma("foreign_keys = ON");
  const ids: LegacyIds = {
    driverId: newUlid(t0),
    sessionId: newUlid(t0),
    runId: newUlid(t0),
    succeededCommandId: newUlid(t0),
    unknownCommandId: newUlid(t0),
    succeededEffectId: newUlid(t0),
    unknownEffectId: newUlid(t0),
    unknownKey: newUlid(t0),
  };
  const args = { title: "Disk full on db-1", body: "seen at 03:12" };
  const payload = (commandId: string) =>
    JSON.stringify({
      commandId,
      requestId: "req-1",
      serverId: "tracker",
      toolCallId: "tc-1",
      toolName: "createIssue",
      argumentsJson: JSON.stringify(args),
    });
  const result = JSON.stringify({ outputText: "Created issue #1", requestId: "req-1", serverId: "tracker", toolName: "createIssue" });
  const run = (stmt: string, ...params: unknown[]) => sqlite.prepare(stmt).run(...params);
  sqlite.transaction(() => {
    run(
      `INSERT INTO driver_instances (id, name, status, token_hash, connection_id, last_heartbeat_at_ms, registered_at_ms) VALUES (?, 'driver-a', 'connected', ?, ?, ?, ?)`,
      ids.driverId,
      "a".repeat(64),
      newUlid(t0),
      t0,
      t0,
    );
    run(`INSERT INTO sessions (id, created_at_ms) VALUES (?, ?)`, ids.sessionId, t0);
    run(
      `INSERT INTO session_runs (id, session_id, driver_instance_id, status, created_at_ms, updated_at_ms) VALUES (?, ?, ?, 'active', ?, ?)`,
      ids.runId,
      ids.sessionId,
      ids.driverId,
      t0,
      t0,
    );
    run(
      `INSERT INTO driver_commands (id, driver_instance_id, run_id, seq, type, status, payload_json, result_json, delivery_count, created_at_ms, updated_at_ms, terminal_at_ms) VALUES (?, ?, ?, 1, 'mcp.execute', 'completed', ?, ?, 1, ?, ?, ?)`,
      ids.succeededCommandId,
      ids.driverId,
      ids.runId,
      payload(ids.succeededCommandId),
      result,
      t0,
      t0 + 5,
      t0 + 5,
    );
    run(
      `INSERT INTO driver_commands (id, driver_instance_id, run_id, seq, type, status, payload_json, delivery_count, created_at_ms, updated_at_ms) VALUES (?, ?, ?, 2, 'mcp.execute', 'accepted', ?, 2, ?, ?)`,
      ids.unknownCommandId,
      ids.driverId,
      ids.runId,
      payload(ids.unknownCommandId),
      t0,
      t0 + 9,
    );
    const effect = `INSERT INTO external_tool_effects (id, command_id, run_id, driver_instance_id, server_id, tool_name, tool_call_id, request_id, arguments_json, idempotency_key, request_fingerprint, status, attempt_count, result_json, provider_receipt_json, first_dispatched_at_ms, last_dispatched_at_ms, created_at_ms, updated_at_ms) VALUES (?, ?, ?, ?, 'tracker', 'createIssue', 'tc-1', 'req-1', ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?)`;
    run(
      effect,
      ids.succeededEffectId,
      ids.succeededCommandId,
      ids.runId,
      ids.driverId,
      JSON.stringify(args),
      newUlid(t0),
      fingerprintArguments(args),
      "succeeded",
      result,
      JSON.stringify({ "io.mosoo/provider-operation-id": "iss_1" }),
      t0 + 1,
      t0 + 1,
      t0,
      t0 + 5,
    );
    run(
      effect,
      ids.unknownEffectId,
      ids.unknownCommandId,
      ids.runId,
      ids.driverId,
      JSON.stringify(args),
      ids.unknownKey,
      fingerprintArguments(args),
      "unknown",
      null,
      null,
      t0 + 2,
      t0 + 2,
      t0,
      t0 + 9,
    );
    const attempt = `INSERT INTO external_tool_effect_attempts (effect_id, attempt, status, connection_id, provider_receipt_json, unknown_reason, started_at_ms, finished_at_ms) VALUES (?, 1, ?, ?, ?, ?, ?, ?)`;
    run(
      attempt,
      ids.succeededEffectId,
      "succeeded",
      newUlid(t0),
      JSON.stringify({ "io.mosoo/provider-operation-id": "iss_1" }),
      null,
      t0 + 1,
      t0 + 5,
    );
    run(attempt, ids.unknownEffectId, "unknown", newUlid(t0), null, "redelivered_while_executing", t0 + 2, t0 + 9);
    const event = `INSERT INTO run_events (id, run_id, seq, type, terminal, payload_json, created_at_ms) VALUES (?, ?, ?, ?, 0, '{}', ?)`;
    ["run.created", "tool_call.queued", "tool_call.queued", "tool_call.completed", "effect.fenced"].forEach((type, i) =>
      run(event, newUlid(t0), ids.runId, i + 1, type, t0 + i),
    );
  })();
  sqlite.close();
  return ids;
}

/** Every row of the legacy tables, by table, ordered by rowid, restricted to the columns of the pre-reconciliation schema. */
export function dumpLegacyRows(sqlite: Database.Database, legacyColumns: Record<string, string[]>): Record<string, unknown[]> {
  return Object.fromEntries(
    LEGACY_TABLES.map((t) => [
      t,
      sqlite.prepare(`SELECT ${legacyColumns[t]!.map((c) => `"${c}"`).join(", ")} FROM ${t} ORDER BY 1, 2`).all(),
    ]),
  );
}

/** The column names of each legacy table as `sqlite` has them. */
export function columnsOf(sqlite: Database.Database): Record<string, string[]> {
  return Object.fromEntries(
    LEGACY_TABLES.map((t) => [t, (sqlite.prepare(`PRAGMA table_info(${t})`).all() as Array<{ name: string }>).map((c) => c.name)]),
  );
}
