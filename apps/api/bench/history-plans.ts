/**
 * The history scenario's plan check at size: the statements the measured operations ran on the filled store,
 * captured as they ran and planned there (`EXPLAIN QUERY PLAN` on SQLite, `EXPLAIN` with the filled database's
 * statistics on PostgreSQL), and which of them read a table that grows with history whole.
 */
import Database from "better-sqlite3";
import pg from "pg";
import { progress } from "./bench-store.harness.js";
import { BIG_TABLES } from "../tests/helpers/index-report.js";

/** Tables that grow with every effect, run, lookup or Driver: a hot-path statement must reach them through an index (the index-plan test's list). */
const HISTORY_TABLES = BIG_TABLES;

/** Statements that are not queries: transaction control, settings, schema. */
const NOT_A_QUERY =
  /^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|SET|RESET|SHOW|LISTEN|UNLISTEN|NOTIFY|PRAGMA|CREATE|DROP|ALTER|SELECT 1$)/i;

/** One distinct statement an operation ran: its SQL, one set of its parameters, and the operations that ran it. */
export interface CapturedQuery {
  sql: string;
  params: unknown[];
  operations: string[];
}

/** The check's result: how many distinct statements were planned, and those whose plan reads a history table whole (with the plan's lines). */
export interface PlanCheck {
  statements: number;
  fullScans: Array<{ sql: string; operations: string[]; tables: string[]; plan: string[] }>;
}

/** Adds one execution to `into` (distinct by SQL text; the first parameters kept). */
function record(into: Map<string, CapturedQuery>, operation: string, sql: string, params: unknown[]): void {
  if (NOT_A_QUERY.test(sql)) return;
  const seen = into.get(sql);
  if (!seen) into.set(sql, { sql, params, operations: [operation] });
  else if (!seen.operations.includes(operation)) seen.operations.push(operation);
}

/**
 * Runs `fn` once and records every statement it executes on any better-sqlite3 connection of this process
 * (the `run`/`get`/`all`/`iterate` of `Statement`: the store caches compiled statements, so executions, not
 * preparations, are what an operation ran) into `into` under `operation`.
 */
export async function captureSqlite(into: Map<string, CapturedQuery>, operation: string, fn: () => Promise<unknown>): Promise<void> {
  const probe = new Database(":memory:");
  const statementProto = Object.getPrototypeOf(probe.prepare("SELECT 1")) as Record<string, (...args: unknown[]) => unknown>;
  probe.close();
  const names = ["run", "get", "all", "iterate"] as const;
  const originals = names.map((n) => statementProto[n]!);
  names.forEach((n, i) => {
    statementProto[n] = function captured(this: { source: string }, ...args: unknown[]) {
      record(into, operation, this.source, args);
      return originals[i]!.apply(this, args);
    };
  });
  try {
    await fn();
  } finally {
    names.forEach((n, i) => (statementProto[n] = originals[i]!));
  }
}

/** Runs `fn` once and records every query it sends through a `pg` client into `into` under `operation`. */
export async function capturePg(into: Map<string, CapturedQuery>, operation: string, fn: () => Promise<unknown>): Promise<void> {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function captured(this: unknown, ...args: unknown[]) {
    const [first, second] = args;
    if (typeof first === "string") record(into, operation, first, Array.isArray(second) ? second : []);
    else if (first && typeof first === "object" && typeof (first as { text?: unknown }).text === "string") {
      const q = first as { text: string; values?: unknown[] };
      record(into, operation, q.text, q.values ?? (Array.isArray(second) ? second : []));
    }
    return original.apply(this, args);
  };
  try {
    await fn();
  } finally {
    proto.query = original;
  }
}

/** Plans each captured statement on the SQLite store `sqlite` (`EXPLAIN QUERY PLAN`, parameters as captured); a `SCAN` of a history table is a full read. */
export function checkSqlitePlans(sqlite: Database.Database, captured: Map<string, CapturedQuery>): PlanCheck {
  const fullScans: PlanCheck["fullScans"] = [];
  for (const q of captured.values()) {
    const plan = (sqlite.prepare(`EXPLAIN QUERY PLAN ${q.sql}`).all(...(q.params as unknown[])) as Array<{ detail: string }>).map(
      (r) => r.detail,
    );
    const tables = HISTORY_TABLES.filter((t) => plan.some((line) => new RegExp(`^SCAN ${t}\\b`).test(line)));
    if (tables.length > 0) fullScans.push({ sql: q.sql, operations: q.operations, tables, plan });
  }
  return { statements: captured.size, fullScans };
}

/**
 * Below this many rows (`pg_class.reltuples`) PostgreSQL rightly reads a table whole rather than through an
 * index (a history with no operator actions leaves `effect_operator_actions` empty, and `max(id)` of an empty
 * table is a sequential scan of nothing); a table that grows past it gets an index plan.
 */
const PG_SMALL_TABLE_ROWS = 10_000;

/**
 * Plans each captured statement on the PostgreSQL database behind `pool` (`EXPLAIN`, its statistics, parameters
 * as captured); a `Seq Scan` of a history table holding at least {@link PG_SMALL_TABLE_ROWS} rows is a full read.
 */
export async function checkPgPlans(pool: pg.Pool, captured: Map<string, CapturedQuery>): Promise<PlanCheck> {
  const fullScans: PlanCheck["fullScans"] = [];
  const { rows: sizes } = await pool.query<{ name: string; rows: number }>(
    "SELECT relname AS name, reltuples::float8 AS rows FROM pg_class WHERE relkind = 'r' AND relname = ANY($1)",
    [HISTORY_TABLES],
  );
  const grown = HISTORY_TABLES.filter((t) => (sizes.find((s) => s.name === t)?.rows ?? 0) >= PG_SMALL_TABLE_ROWS);
  for (const q of captured.values()) {
    const { rows } = await pool.query<{ "QUERY PLAN": string }>(`EXPLAIN ${q.sql}`, q.params);
    const plan = rows.map((r) => r["QUERY PLAN"]);
    const tables = grown.filter((t) => plan.some((line) => new RegExp(`Seq Scan on ${t}\\b`).test(line)));
    if (tables.length > 0) fullScans.push({ sql: q.sql, operations: q.operations, tables, plan });
  }
  return { statements: captured.size, fullScans };
}

/** Prints the check: the count, and each statement that reads a history table whole with its plan. */
export function reportPlanCheck(check: PlanCheck): void {
  progress(
    `history: ${check.statements} distinct statements of the measured operations planned on the filled store, ${check.fullScans.length} read a history table whole`,
  );
  for (const f of check.fullScans)
    progress(`  full read of ${f.tables.join(", ")} by ${f.operations.join(", ")}: ${f.sql}\n    ${f.plan.join("\n    ")}`);
}
