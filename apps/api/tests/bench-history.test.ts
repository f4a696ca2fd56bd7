// The bench's history generators and rows (docs/performance.md "History rows"): the same history on both stores,
// sound by the stores' own constraints, and the rows' ratios and gated figures over made-up numbers. No timing is asserted.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fillHistory } from "../bench/history-store.generator.js";
import { historyBatches, NO_HISTORY, type HistoryShape } from "../bench/history-store.rows.js";
import { fillHistoryPg } from "../bench/pg-history.generator.js";
import { historyRows } from "../bench/history-store.report.js";
import { pgHistoryRows } from "../bench/pg-history.report.js";
import type { PgHistoryResult } from "../bench/pg-history.scenario.js";
import { isBaselineFigure } from "../bench/pg-bench.report.js";
import { captureSqlite, capturePg, checkPgPlans, checkSqlitePlans, type CapturedQuery } from "../bench/history-plans.js";
import { openSqliteStore, type SqliteStore } from "../src/platform/db/sqlite/sqlite-store.js";
import type { PostgresStore } from "../src/platform/db/postgres/postgres-store.js";
import { openPostgresTarget } from "./helpers/pg-store-targets.js";

const TABLES = [
  "driver_instances",
  "sessions",
  "session_runs",
  "run_events",
  "driver_commands",
  "external_tool_effects",
  "external_tool_effect_attempts",
  "effect_reconciliations",
] as const;

const LONG_LIVED = "01J0000000000000000000LONG";
/** 25,000 effects: two batches of the generator; 1,000 finalized Drivers share what the long-lived one does not hold. */
const SHAPE: HistoryShape = { effects: 25_000, finalizedDrivers: 1_000, longLived: { driverInstanceId: LONG_LIVED, commands: 3_000 } };
const EXPECTED = { driverInstances: 1_000, runs: 300 + 1_000 * 3, commands: 25_000, effects: 25_000, reconciliations: 1_250 };

/** Inserts the long-lived Driver as registration would leave it (connected, no commands yet). */
const LONG_LIVED_ROW = `INSERT INTO driver_instances (id, name, status, token_hash, connection_id, last_heartbeat_at_ms, registered_at_ms, last_command_seq)
  VALUES ('${LONG_LIVED}', 'long-lived', 'connected', 'x', 'c1', 1, 1, 0)`;

describe("historyBatches", () => {
  it("hands out the shape's rows in batches and counts them", () => {
    const gen = historyBatches(SHAPE);
    let batches = 0;
    let effects = 0;
    let next = gen.next();
    while (!next.done) {
      batches += 1;
      effects += next.value.external_tool_effects.length;
      // every row of a batch references runs of the same batch (a run never spans two)
      const runs = new Set(next.value.session_runs.map((r) => r[0]));
      expect(next.value.external_tool_effects.every((e) => runs.has(e[2]!))).toBe(true);
      next = gen.next();
    }
    expect(batches).toBe(2);
    expect(effects).toBe(25_000);
    expect(next.value.counts).toMatchObject(EXPECTED);
    expect(next.value.counts.runEvents).toBe(2 * 25_000 + 2 * EXPECTED.runs);
    expect(next.value.longLivedLastSeq).toBe(3_000);
    expect({ ...NO_HISTORY, ...next.value.counts }).toEqual(next.value.counts);
  });
});

describe("the history generators on SQLite and PostgreSQL", () => {
  let sqlite: SqliteStore;
  let pgTarget: Awaited<ReturnType<typeof openPostgresTarget>>;
  let pgStore: PostgresStore;

  beforeAll(async () => {
    sqlite = openSqliteStore(":memory:");
    sqlite.sqlite.exec(LONG_LIVED_ROW);
    pgTarget = await openPostgresTarget("bench_history");
    pgStore = pgTarget.store as PostgresStore;
    await pgStore.pool.query(LONG_LIVED_ROW);
  }, 120_000);
  afterAll(async () => {
    sqlite?.closeNow();
    await pgTarget?.close();
  }, 60_000);

  it("write the same rows, table by table, within the stores' foreign keys and checks, and number the long-lived Driver's commands on", async () => {
    const progress: number[] = [];
    const sqliteCounts = fillHistory(sqlite.sqlite, SHAPE, (n) => progress.push(n));
    const pgCounts = await fillHistoryPg(pgStore.pool, SHAPE);
    expect(sqliteCounts).toEqual(pgCounts);
    expect(sqliteCounts).toMatchObject(EXPECTED);
    expect(progress).toHaveLength(2);
    expect(progress.at(-1)).toBe(25_000);
    expect(sqlite.sqlite.pragma("foreign_key_check")).toEqual([]);
    for (const table of TABLES) {
      const onSqlite = sqlite.sqlite.prepare(`SELECT count(*) FROM ${table}`).pluck().get();
      const onPg = (await pgStore.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n;
      expect({ table, n: onPg }).toEqual({ table, n: onSqlite });
    }
    expect(sqlite.sqlite.prepare(`SELECT last_command_seq FROM driver_instances WHERE id = '${LONG_LIVED}'`).pluck().get()).toBe(3_000);
    const pgSeq = await pgStore.pool.query<{ s: number }>(`SELECT last_command_seq AS s FROM driver_instances WHERE id = $1`, [LONG_LIVED]);
    expect(pgSeq.rows[0]!.s).toBe(3_000);
    // the history is finished: nothing open, nothing unknown, nothing for the sweep
    for (const q of [
      "SELECT count(*) FROM driver_commands WHERE terminal_at_ms IS NULL",
      "SELECT count(*) FROM external_tool_effects WHERE status <> 'succeeded'",
    ])
      expect(sqlite.sqlite.prepare(q).pluck().get()).toBe(0);
  }, 120_000);

  it("the plan check at size names a statement that reads a history table whole and passes one that seeks, on both stores", async () => {
    const scan = "SELECT count(*) AS n FROM run_events WHERE payload_json = ?";
    const seek = "SELECT * FROM run_events WHERE id = ?";
    const onSqlite = new Map<string, CapturedQuery>();
    await captureSqlite(onSqlite, "scan", async () => sqlite.sqlite.prepare(scan).get("{}"));
    await captureSqlite(onSqlite, "seek", async () => sqlite.sqlite.prepare(seek).get("x"));
    const s = checkSqlitePlans(sqlite.sqlite, onSqlite);
    expect(s.statements).toBe(2);
    expect(s.fullScans.map((f) => [f.operations, f.tables])).toEqual([[["scan"], ["run_events"]]]);
    // PostgreSQL plans by statistics: as autovacuum would have gathered them on a store this size
    await pgStore.pool.query("ANALYZE");
    const onPg = new Map<string, CapturedQuery>();
    await capturePg(onPg, "scan", () => pgStore.pool.query(scan.replace("?", "$1"), ["{}"]));
    await capturePg(onPg, "seek", () => pgStore.pool.query(seek.replace("?", "$1"), ["x"]));
    const p = await checkPgPlans(pgStore.pool, onPg);
    expect(p.statements).toBe(2);
    expect(p.fullScans.map((f) => [f.operations, f.tables])).toEqual([[["scan"], ["run_events"]]]);
  }, 120_000);
});

/** A made-up PostgreSQL history result: the filled side a little slower, or as `over` says. */
function result(
  over: { filledDeliveryUs?: number; filledOpenMs?: number; filledServerUs?: number; fullScan?: boolean } = {},
): PgHistoryResult {
  const tasks = { lifecycle: 1000, delivery: 100, overview: 200, sweep: 300 };
  const cpu = (serverUs: number) => ({ apiUs: 100, serverUs });
  const extras = (serverUs: number) => ({
    roundTrips: { lifecycle: 19, delivery: 4, overview: 5, sweep: 21 },
    cpu: { lifecycle: cpu(100), delivery: cpu(serverUs), overview: cpu(100), sweep: cpu(100) },
  });
  return {
    longLivedCommands: 100_000,
    recoveryEffects: 2_000,
    empty: { openMs: 20, tasksUs: tasks, recoveryUsPerOutcome: 500, recoveryCpuUsPerOutcome: 300 },
    filled: {
      openMs: over.filledOpenMs ?? 21,
      tasksUs: { ...tasks, delivery: over.filledDeliveryUs ?? 110 },
      recoveryUsPerOutcome: 520,
      recoveryCpuUsPerOutcome: 290,
    },
    counts: {
      driverInstances: 10_000,
      runs: 100_000,
      commands: 1_000_000,
      effects: 1_000_000,
      runEvents: 2_200_000,
      reconciliations: 50_000,
    },
    fileBytes: 3e9,
    fillMs: 600_000,
    extras: { empty: extras(100), filled: extras(over.filledServerUs ?? 100) },
    loadAverage: 1,
    planCheck: {
      statements: 40,
      fullScans: over.fullScan ? [{ sql: "SELECT 1 FROM run_events", operations: ["overview"], tables: ["run_events"], plan: [] }] : [],
    },
  };
}

describe("history rows", () => {
  it("judge each operation at 1.2× of the empty store and store open under 1 s; gate the ratios, never below 1", () => {
    const { rows, figures } = historyRows(result({ filledDeliveryUs: 130, filledOpenMs: 1_200, fullScan: true }));
    expect(rows.map((r) => r.met)).toEqual(["yes", "no", "yes", "yes", "yes", "no", "no"]);
    expect(rows.at(-1)!.measured).toBe("1 of 40 statements read a history table whole");
    const byKey = Object.fromEntries(figures.map((f) => [f.key, f.value]));
    expect(byKey["history.delivery@1000k.ratio"]).toBeCloseTo(1.3);
    expect(byKey["history.recovery@1000k.ratio"]).toBeCloseTo(1.04);
    expect(byKey["history.lifecycle@1000k.ratio"]).toBe(1);
    expect(byKey["history.open@1000k.ratio"]).toBeCloseTo(60);
    expect(byKey["history.plans@1000k.fullScans"]).toBe(1);
  });

  it("on PostgreSQL gate round trips and the CPU ratio (API plus server), print the wall ratio ungated", () => {
    const { rows, figures } = pgHistoryRows(result({ filledServerUs: 300 }));
    expect(rows.map((r) => r.met)).toEqual(["yes", "yes", "yes", "yes", "yes", "yes", "yes"]);
    const byKey = Object.fromEntries(figures.map((f) => [f.key, f.value]));
    expect(byKey["pg.history.delivery@1000k.cpuRatio"]).toBeCloseTo(2);
    expect(byKey["pg.history.delivery@1000k.roundTrips"]).toBe(4);
    expect(byKey["pg.history.recovery@1000k.cpuRatio"]).toBe(1);
    const gated = figures.filter((f) => isBaselineFigure(f.key)).map((f) => f.key);
    expect(gated).toContain("pg.history.sweep@1000k.cpuRatio");
    expect(gated).toContain("pg.history.sweep@1000k.roundTrips");
    expect(gated).toContain("pg.history.plans@1000k.fullScans");
    expect(gated.some((k) => k.endsWith(".ratio"))).toBe(false);
  });
});
