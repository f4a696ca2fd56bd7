// Statements and WAL pages per step of one mcp.execute lifecycle on a file-backed SQLite store (`npm run db:wal-pages`, bench row 1).
import { statSync } from "node:fs";
import type Database from "better-sqlite3";
import { installDbTimeMeter } from "./bench-store.harness.js";
import type { Runtime } from "../src/composition-root.js";

/** The measured steps of one lifecycle, in order (delivery is measured but not part of the lifecycle's sum). */
export const LIFECYCLE_STEPS = ["enqueue", "deliver", "claim", "complete", "terminal"] as const;

/** One figure per step of {@link LIFECYCLE_STEPS}. */
export type PerStep = Record<(typeof LIFECYCLE_STEPS)[number], number>;

/**
 * Mean per step over the measured lifecycles: `pages` (WAL frames the step's commit appended), `statements`
 * (every prepared statement run, BEGIN and COMMIT included) and `dataStatements` (BEGIN and COMMIT left out).
 */
export interface LifecycleWrites {
  pages: PerStep;
  statements: PerStep;
  dataStatements: PerStep;
}

/** Sum of a per-step figure over the lifecycle: enqueue + claim + complete + terminal (delivery excluded, as in the ledger bench). */
export const lifecycleSum = (t: PerStep): number => t.enqueue + t.claim + t.complete + t.terminal;

/**
 * Runs `n` `mcp.execute` lifecycles (enqueue, delivery, claim, complete, terminal `completed` update) for
 * `serverId`/`toolName` through `runtime`'s real services on the SQLite handle `sqlite` whose file is `file`
 * (WAL mode). Before each step the WAL is checkpointed and truncated (`wal_checkpoint(TRUNCATE)`), so the WAL's
 * size after it is that step's pages: (bytes − 32) / (24 + page size). Deterministic but for the odd B-tree
 * page split; no timing. `onSql(step, calls, sql)`, when given, receives the statements of the first lifecycle.
 * Throws when a step does not take the usual path (a claim that is not `execute`, an update not `applied`).
 */
export async function measureLifecycleWrites(
  runtime: Runtime,
  sqlite: Database.Database,
  file: string,
  opts: { n: number; serverId: string; toolName: string; onSql?: (step: string, calls: number, sql: string) => void },
): Promise<LifecycleWrites> {
  const pageSize = sqlite.pragma("page_size", { simple: true }) as number;
  const walPages = (): number => {
    const bytes = statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0;
    return bytes <= 32 ? 0 : (bytes - 32) / (24 + pageSize);
  };
  const zero = (): PerStep => Object.fromEntries(LIFECYCLE_STEPS.map((s) => [s, 0])) as PerStep;
  const pages = zero();
  const statements = zero();
  const dataStatements = zero();
  const meter = installDbTimeMeter(sqlite);
  let first = true;
  const step = async <T>(name: (typeof LIFECYCLE_STEPS)[number], fn: () => T | Promise<T>): Promise<T> => {
    sqlite.pragma("wal_checkpoint(TRUNCATE)");
    meter.reset();
    const out = await fn();
    const run = meter.topStatements(1000).filter((st) => !st.sql.startsWith("("));
    statements[name] += meter.counts().statements;
    dataStatements[name] += run.filter((st) => !/^\s*(BEGIN|COMMIT)\b/i.test(st.sql)).reduce((k, st) => k + st.calls, 0);
    if (opts.onSql && first) for (const st of run) opts.onSql(name, st.calls, st.sql);
    pages[name] += walPages();
    return out;
  };
  const { driverToken } = await runtime.drivers.register({ name: "lifecycle-writes" }, { kind: "enrollment" });
  const { connectionId } = await runtime.drivers.connect(await runtime.drivers.authenticate(driverToken));
  const instance = await runtime.drivers.authenticate(driverToken);
  const { runId } = await runtime.runs.createRun({ driverInstanceId: instance.id });
  const { serverId, toolName } = opts;
  const result = { outputText: "ok", requestId: "r", serverId, toolName };
  for (let i = 0; i < opts.n; i++) {
    const call = await step("enqueue", () =>
      runtime.runs.enqueueToolCall(runId, { serverId, toolName, arguments: { n: i }, requestId: "r" }),
    );
    await step("deliver", () => runtime.commands.nextCommand(instance, connectionId, 0));
    const claim = await step("claim", () => runtime.ledger.claim(instance, connectionId, call.commandId));
    if (claim.kind !== "execute") throw new Error(`expected an execute claim, got ${claim.kind}`);
    await step("complete", () =>
      runtime.ledger.complete(instance, call.effectId, { connectionId, attempt: claim.attempt, result, receipt: null }),
    );
    const update = await step("terminal", () =>
      runtime.commands.updateCommand(instance, call.commandId, { connectionId, status: "completed", result }),
    );
    if (update.outcome !== "applied") throw new Error(`terminal update ${update.outcome}`);
    first = false;
  }
  const mean = (t: PerStep): PerStep => Object.fromEntries(LIFECYCLE_STEPS.map((s) => [s, t[s] / opts.n])) as PerStep;
  return { pages: mean(pages), statements: mean(statements), dataStatements: mean(dataStatements) };
}
