/**
 * Fills a migrated SQLite store with a long history, fast: raw prepared inserts in big transactions, never
 * the API (the bench's history rows measure the API against it, not the filling).
 */
import { createHash } from "node:crypto";
import type Database from "better-sqlite3";
import { monotonicFactory } from "ulid";
import { BENCH_TOOL } from "./fixed-latency.adapter.js";

/**
 * What {@link fillHistory} writes. `effects`: finished tool calls in all (each with its command, one
 * attempt and two run events); `finalizedDrivers`: Driver instances that connected, worked and were
 * finalized (the effects not of the long-lived Driver are spread over them); `longLived`: a Driver
 * instance the caller registered, given `commands` past finished commands (counted in `effects`);
 * `effectsPerRun` (default 10): tool calls per run (each run its own session, two run events of its own);
 * `lookupEvery` (default 20): one confirmed reconciliation record per that many effects.
 */
export interface HistoryShape {
  effects: number;
  finalizedDrivers: number;
  longLived: { driverInstanceId: string; commands: number } | undefined;
  effectsPerRun?: number;
  lookupEvery?: number;
}

/** Row counts {@link fillHistory} wrote, by table. */
export type HistoryCounts = Record<"driverInstances" | "runs" | "commands" | "effects" | "runEvents" | "reconciliations", number>;

/** Rows per transaction. */
const BATCH = 20_000;
/** The history's time span: from 30 days to 2 days before now (ids are ULIDs of these times), in ms. */
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Writes `shape`'s history into `sqlite` (migrated, foreign keys as the store set them), oldest first, every
 * row dated between 30 and 2 days ago (older than the overview's 24-hour window). The long-lived Driver's
 * `last_command_seq` is advanced past its history, so its next command numbers on.
 * @returns the row counts written.
 */
export function fillHistory(sqlite: Database.Database, shape: HistoryShape): HistoryCounts {
  // a factory of its own: the runtime's is monotonic across the process and would date these ids "now"
  const newUlid = monotonicFactory();
  const perRun = shape.effectsPerRun ?? 10;
  const lookupEvery = shape.lookupEvery ?? 20;
  const counts: HistoryCounts = { driverInstances: 0, runs: 0, commands: 0, effects: 0, runEvents: 0, reconciliations: 0 };
  const start = Date.now() - 30 * DAY_MS;
  const span = 28 * DAY_MS;
  const fingerprint = createHash("sha256").update("{}").digest("hex");
  const result = JSON.stringify({ outputText: "ok", requestId: "history", serverId: "history", toolName: BENCH_TOOL });
  const receipt = JSON.stringify({ kind: "provider_operation", operationId: "history" });
  const ins = {
    driver: sqlite.prepare(
      `INSERT INTO driver_instances (id, name, status, token_hash, connection_id, last_heartbeat_at_ms, registered_at_ms, finalized_at_ms, last_command_seq)
       VALUES (?, 'history', 'finalized', ?, ?, ?, ?, ?, ?)`,
    ),
    session: sqlite.prepare("INSERT INTO sessions (id, created_at_ms) VALUES (?, ?)"),
    run: sqlite.prepare(
      `INSERT INTO session_runs (id, session_id, driver_instance_id, status, created_at_ms, updated_at_ms, last_event_seq)
       VALUES (?, ?, ?, 'completed', ?, ?, ?)`,
    ),
    event: sqlite.prepare(
      "INSERT INTO run_events (id, run_id, seq, type, terminal, payload_json, created_at_ms) VALUES (?, ?, ?, ?, ?, '{}', ?)",
    ),
    command: sqlite.prepare(
      `INSERT INTO driver_commands (id, driver_instance_id, run_id, seq, type, status, payload_json, result_json, delivered_connection_id,
         delivery_count, created_at_ms, updated_at_ms, terminal_at_ms)
       VALUES (?, ?, ?, ?, 'mcp.execute', 'completed', '{}', ?, 'history', 1, ?, ?, ?)`,
    ),
    effect: sqlite.prepare(
      `INSERT INTO external_tool_effects (id, command_id, run_id, driver_instance_id, server_id, tool_name, tool_call_id, request_id, arguments_json,
         idempotency_key, request_fingerprint, status, resolution, version, attempt_count, result_json, first_dispatched_at_ms,
         last_dispatched_at_ms, created_at_ms, updated_at_ms)
       VALUES (?, ?, ?, ?, 'history', ?, ?, 'history', '{}', ?, ?, 'succeeded', 'provider_result', 2, 1, ?, ?, ?, ?, ?)`,
    ),
    attempt: sqlite.prepare(
      "INSERT INTO external_tool_effect_attempts (effect_id, attempt, status, connection_id, started_at_ms, finished_at_ms) VALUES (?, 1, 'succeeded', 'history', ?, ?)",
    ),
    lookup: sqlite.prepare(
      `INSERT INTO effect_reconciliations (id, effect_id, adapter_id, adapter_version, trigger, outcome, reason_code, receipt_json, result_json,
         started_at_ms, finished_at_ms)
       VALUES (?, ?, 'history', '1.0.0', 'sweep', 'confirmed_succeeded', 'provider.found', ?, ?, ?, ?)`,
    ),
  };
  // filling is not measured: no fsync per batch, a large page cache (restored below)
  const synchronous = sqlite.pragma("synchronous", { simple: true }) as number;
  const cacheSize = sqlite.pragma("cache_size", { simple: true }) as number;
  sqlite.pragma("synchronous = OFF");
  sqlite.pragma("cache_size = -262144");
  const longLivedCommands = shape.longLived?.commands ?? 0;
  const others = shape.effects - longLivedCommands;
  const perDriver = shape.finalizedDrivers > 0 ? Math.ceil(others / shape.finalizedDrivers) : 0;
  // the plan: (driver id, effects) pairs, the long-lived Driver first
  const plan: Array<{ driverInstanceId: string | undefined; effects: number }> = [];
  if (shape.longLived && longLivedCommands > 0)
    plan.push({ driverInstanceId: shape.longLived.driverInstanceId, effects: longLivedCommands });
  for (let d = 0, left = others; d < shape.finalizedDrivers; d++) {
    const n = Math.min(perDriver, left);
    plan.push({ driverInstanceId: undefined, effects: n });
    left -= n;
  }
  let written = 0;
  const at = () => Math.floor(start + (span * written) / Math.max(1, shape.effects));
  // one Driver's history, in transactions of about BATCH effects (a run never spans two)
  const writeRuns = sqlite.transaction((driverInstanceId: string, firstSeq: number, runs: number[]) => {
    let seq = firstSeq;
    for (const n of runs) {
      const t = at();
      const runId = newUlid(t);
      const sessionId = newUlid(t);
      ins.session.run(sessionId, t);
      ins.run.run(runId, sessionId, driverInstanceId, t, t, 2 * n + 2);
      ins.event.run(newUlid(t), runId, 1, "run.created", 0, t);
      counts.runs += 1;
      for (let i = 0; i < n; i++) {
        const te = at();
        const commandId = newUlid(te);
        const effectId = newUlid(te);
        seq += 1;
        ins.command.run(commandId, driverInstanceId, runId, seq, result, te, te, te);
        ins.effect.run(
          effectId,
          commandId,
          runId,
          driverInstanceId,
          BENCH_TOOL,
          newUlid(te),
          newUlid(te),
          fingerprint,
          result,
          te,
          te,
          te,
          te,
        );
        ins.attempt.run(effectId, te, te);
        ins.event.run(newUlid(te), runId, 2 * i + 2, "tool_call.queued", 0, te);
        ins.event.run(newUlid(te), runId, 2 * i + 3, "tool_call.completed", 0, te);
        written += 1;
        if (written % lookupEvery === 0) {
          ins.lookup.run(newUlid(te), effectId, receipt, result, te, te);
          counts.reconciliations += 1;
        }
      }
      ins.event.run(newUlid(at()), runId, 2 * n + 2, "run.completed", 1, at());
      counts.runEvents += 2 * n + 2;
    }
    return seq;
  });
  for (const entry of plan) {
    let driverInstanceId = entry.driverInstanceId;
    if (driverInstanceId === undefined) {
      const t = at();
      driverInstanceId = newUlid(t);
      ins.driver.run(driverInstanceId, fingerprint, newUlid(t), t, t, t + 1, entry.effects);
      counts.driverInstances += 1;
    }
    let seq = 0;
    for (let left = entry.effects; left > 0;) {
      const runs: number[] = [];
      for (let inBatch = 0; inBatch < BATCH && left > 0;) {
        const n = Math.min(perRun, left);
        runs.push(n);
        inBatch += n;
        left -= n;
      }
      seq = writeRuns(driverInstanceId, seq, runs);
    }
    counts.commands += entry.effects;
    counts.effects += entry.effects;
    if (entry.driverInstanceId !== undefined)
      sqlite.prepare("UPDATE driver_instances SET last_command_seq = last_command_seq + ? WHERE id = ?").run(seq, entry.driverInstanceId);
  }
  sqlite.pragma(`synchronous = ${synchronous}`);
  sqlite.pragma(`cache_size = ${cacheSize}`);
  return counts;
}
