/**
 * The bench's history as rows: one plan of a long store history (finalized Drivers, a long-lived Driver's
 * commands, runs, events, effects, attempts, lookups) handed out in batches, written by the SQLite generator
 * (prepared inserts) and the PostgreSQL one (COPY) alike, so both stores hold the same history.
 */
import { createHash } from "node:crypto";
import { monotonicFactory } from "ulid";
import { BENCH_TOOL } from "./fixed-latency.adapter.js";

/**
 * What the history holds. `effects`: finished tool calls in all (each with its command, one attempt and two
 * run events); `finalizedDrivers`: Driver instances that connected, worked and were finalized (the effects
 * not of the long-lived Driver are spread over them); `longLived`: a Driver instance the caller registered,
 * given `commands` past finished commands (counted in `effects`); `effectsPerRun` (default 10): tool calls
 * per run (each run its own session, two run events of its own); `lookupEvery` (default 20): one confirmed
 * reconciliation record per that many effects.
 */
export interface HistoryShape {
  effects: number;
  finalizedDrivers: number;
  longLived: { driverInstanceId: string; commands: number } | undefined;
  effectsPerRun?: number;
  lookupEvery?: number;
}

/** Row counts of a history, by table. */
export type HistoryCounts = Record<"driverInstances" | "runs" | "commands" | "effects" | "runEvents" | "reconciliations", number>;

/** No rows yet. */
export const NO_HISTORY: HistoryCounts = { driverInstances: 0, runs: 0, commands: 0, effects: 0, runEvents: 0, reconciliations: 0 };

/**
 * The tables a history writes, in the order a batch must be written (parents before children: foreign
 * keys), each with its columns in the order of a row's values. Values are strings, numbers or null;
 * `run_events.terminal` is 0/1 (SQLite's boolean; PostgreSQL's `boolean` input reads `0`/`1` too).
 */
export const HISTORY_TABLES = {
  driver_instances: [
    "id",
    "name",
    "status",
    "token_hash",
    "connection_id",
    "last_heartbeat_at_ms",
    "registered_at_ms",
    "finalized_at_ms",
    "last_command_seq",
  ],
  sessions: ["id", "created_at_ms"],
  session_runs: ["id", "session_id", "driver_instance_id", "status", "created_at_ms", "updated_at_ms", "last_event_seq"],
  run_events: ["id", "run_id", "seq", "type", "terminal", "payload_json", "created_at_ms"],
  driver_commands: [
    "id",
    "driver_instance_id",
    "run_id",
    "seq",
    "type",
    "status",
    "payload_json",
    "result_json",
    "delivered_connection_id",
    "delivery_count",
    "created_at_ms",
    "updated_at_ms",
    "terminal_at_ms",
  ],
  external_tool_effects: [
    "id",
    "command_id",
    "run_id",
    "driver_instance_id",
    "server_id",
    "tool_name",
    "tool_call_id",
    "request_id",
    "arguments_json",
    "idempotency_key",
    "request_fingerprint",
    "status",
    "resolution",
    "version",
    "attempt_count",
    "result_json",
    "first_dispatched_at_ms",
    "last_dispatched_at_ms",
    "created_at_ms",
    "updated_at_ms",
  ],
  external_tool_effect_attempts: ["effect_id", "attempt", "status", "connection_id", "started_at_ms", "finished_at_ms"],
  effect_reconciliations: [
    "id",
    "effect_id",
    "adapter_id",
    "adapter_version",
    "trigger",
    "outcome",
    "reason_code",
    "receipt_json",
    "result_json",
    "started_at_ms",
    "finished_at_ms",
  ],
} as const;

/** One of {@link HISTORY_TABLES}. */
export type HistoryTable = keyof typeof HISTORY_TABLES;
/** One row's values, in its table's column order. */
export type HistoryRow = Array<string | number | null>;
/** One batch of a history: the rows of each table (write them table by table in {@link HISTORY_TABLES} order, in one transaction). */
export type HistoryBatch = Record<HistoryTable, HistoryRow[]>;

/** Effects per batch (a run never spans two). */
const BATCH = 20_000;
/** One day, ms. */
const DAY_MS = 24 * 60 * 60 * 1000;

/** The long-lived Driver's final command seq (PostgreSQL's generator sets its `last_command_seq` to it, SQLite's trigger moves it there on each command INSERT; its next command numbers on), and the row counts. */
export interface HistoryTotals {
  longLivedLastSeq: number;
  counts: HistoryCounts;
}

/** An empty batch: no row in any table. */
function emptyBatch(): HistoryBatch {
  return {
    driver_instances: [],
    sessions: [],
    session_runs: [],
    run_events: [],
    driver_commands: [],
    external_tool_effects: [],
    external_tool_effect_attempts: [],
    effect_reconciliations: [],
  };
}

/** The plan of a history: (Driver instance id, effects) pairs, the long-lived Driver first (its id given), then each finalized Driver (id undefined: made when written). */
function historyPlan(shape: HistoryShape): Array<{ driverInstanceId: string | undefined; effects: number }> {
  const longLivedCommands = shape.longLived?.commands ?? 0;
  const others = shape.effects - longLivedCommands;
  const perDriver = shape.finalizedDrivers > 0 ? Math.ceil(others / shape.finalizedDrivers) : 0;
  const plan: Array<{ driverInstanceId: string | undefined; effects: number }> = [];
  if (shape.longLived && longLivedCommands > 0)
    plan.push({ driverInstanceId: shape.longLived.driverInstanceId, effects: longLivedCommands });
  for (let d = 0, left = others; d < shape.finalizedDrivers; d++) {
    const n = Math.min(perDriver, left);
    plan.push({ driverInstanceId: undefined, effects: n });
    left -= n;
  }
  return plan;
}

/** The state of one history being written: its ULID factory, shared JSON values, the row counts, effects written so far and the clock dating them (ms). */
interface HistoryWriter {
  newUlid: (t: number) => string;
  fingerprint: string;
  result: string;
  receipt: string;
  lookupEvery: number;
  counts: HistoryCounts;
  written: number;
  at: () => number;
}

/** Pushes one finished effect of run `runId` at command `seq` (its command, effect, attempt, events `2i+2` and `2i+3`; a lookup every `lookupEvery` effects). */
function pushEffect(w: HistoryWriter, batch: HistoryBatch, driverInstanceId: string, runId: string, seq: number, i: number): void {
  const { newUlid, fingerprint, result } = w;
  const te = w.at();
  const commandId = newUlid(te);
  const effectId = newUlid(te);
  batch.driver_commands.push([commandId, driverInstanceId, runId, seq, "mcp.execute", "completed", "{}", result, "history", 1, te, te, te]);
  batch.external_tool_effects.push([
    effectId,
    commandId,
    runId,
    driverInstanceId,
    "history",
    BENCH_TOOL,
    newUlid(te),
    "history",
    "{}",
    newUlid(te),
    fingerprint,
    "succeeded",
    "provider_result",
    2,
    1,
    result,
    te,
    te,
    te,
    te,
  ]);
  batch.external_tool_effect_attempts.push([effectId, 1, "succeeded", "history", te, te]);
  batch.run_events.push([newUlid(te), runId, 2 * i + 2, "tool_call.queued", 0, "{}", te]);
  batch.run_events.push([newUlid(te), runId, 2 * i + 3, "tool_call.completed", 0, "{}", te]);
  w.written += 1;
  if (w.written % w.lookupEvery === 0) {
    batch.effect_reconciliations.push([
      newUlid(te),
      effectId,
      "history",
      "1.0.0",
      "sweep",
      "confirmed_succeeded",
      "provider.found",
      w.receipt,
      result,
      te,
      te,
    ]);
    w.counts.reconciliations += 1;
  }
}

/** Pushes one run of `n` effects (its session, `run.created`, the effects from command `seq + 1`, `run.completed`); returns the last command seq. */
function pushRun(w: HistoryWriter, batch: HistoryBatch, driverInstanceId: string, n: number, seq: number): number {
  const t = w.at();
  const runId = w.newUlid(t);
  const sessionId = w.newUlid(t);
  batch.sessions.push([sessionId, t]);
  batch.session_runs.push([runId, sessionId, driverInstanceId, "completed", t, t, 2 * n + 2]);
  batch.run_events.push([w.newUlid(t), runId, 1, "run.created", 0, "{}", t]);
  w.counts.runs += 1;
  for (let i = 0; i < n; i++) pushEffect(w, batch, driverInstanceId, runId, seq + i + 1, i);
  batch.run_events.push([w.newUlid(w.at()), runId, 2 * n + 2, "run.completed", 1, "{}", w.at()]);
  w.counts.runEvents += 2 * n + 2;
  return seq + n;
}

/**
 * The history of `shape` in batches of about {@link BATCH} effects, oldest first, every row dated between 30
 * and 2 days ago (older than the overview's 24-hour window), ids ULIDs of those times. A finalized Driver's
 * row comes in the first batch of its history. Returns (as the generator's return value) the totals.
 */
export function* historyBatches(shape: HistoryShape): Generator<HistoryBatch, HistoryTotals, undefined> {
  const perRun = shape.effectsPerRun ?? 10;
  const start = Date.now() - 30 * DAY_MS;
  const span = 28 * DAY_MS;
  const w: HistoryWriter = {
    // a factory of its own: the runtime's is monotonic across the process and would date these ids "now"
    newUlid: monotonicFactory(),
    fingerprint: createHash("sha256").update("{}").digest("hex"),
    result: JSON.stringify({ outputText: "ok", requestId: "history", serverId: "history", toolName: BENCH_TOOL }),
    receipt: JSON.stringify({ kind: "provider_operation", operationId: "history" }),
    lookupEvery: shape.lookupEvery ?? 20,
    counts: { ...NO_HISTORY },
    written: 0,
    at: () => Math.floor(start + (span * w.written) / Math.max(1, shape.effects)),
  };
  let longLivedLastSeq = 0;
  let batch = emptyBatch();
  let inBatch = 0;
  for (const entry of historyPlan(shape)) {
    let driverInstanceId = entry.driverInstanceId;
    if (driverInstanceId === undefined) {
      const t = w.at();
      driverInstanceId = w.newUlid(t);
      batch.driver_instances.push([driverInstanceId, "history", "finalized", w.fingerprint, w.newUlid(t), t, t, t + 1, entry.effects]);
      w.counts.driverInstances += 1;
    }
    let seq = 0;
    for (let left = entry.effects; left > 0;) {
      const n = Math.min(perRun, left);
      left -= n;
      seq = pushRun(w, batch, driverInstanceId, n, seq);
      inBatch += n;
      if (inBatch >= BATCH) {
        yield batch;
        batch = emptyBatch();
        inBatch = 0;
      }
    }
    w.counts.commands += entry.effects;
    w.counts.effects += entry.effects;
    if (entry.driverInstanceId !== undefined) longLivedLastSeq = seq;
  }
  if (inBatch > 0 || batch.driver_instances.length > 0) yield batch;
  return { longLivedLastSeq, counts: w.counts };
}
