/**
 * `npm run db:wal-pages` (in apps/api): how many WAL pages each step of one `mcp.execute` lifecycle
 * appends on a file-backed store ("leaner writes"): enqueue (intent + command), delivery,
 * claim, complete, terminal `completed` update, through the real services of the test kit's world
 * (reconciliation off). Before each step the WAL is checkpointed and truncated (`wal_checkpoint(TRUNCATE)`),
 * so the WAL's size after it is that step's pages: (bytes − 32) / (24 + page size). Prints the mean
 * per step over `--lifecycles` (default 100) and their sum without the delivery (the figure the
 * docs/performance-notes.md quotes), and the statements each step runs (BEGIN and COMMIT included;
 * `--sql` lists them). Deterministic but for the odd B-tree page split; no timing.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command, InvalidArgumentError } from "commander";
import { createTestWorld } from "../tests/kit/world.js";
import { installDbTimeMeter } from "../bench/bench-store.harness.js";

const STEPS = ["enqueue", "deliver", "claim", "complete", "terminal"] as const;

type PerStep = Record<(typeof STEPS)[number], number>;

/** Mean WAL pages and statements (BEGIN and COMMIT included) per lifecycle step over `n` lifecycles on a fresh store in a temp folder (removed after). */
async function measure(n: number, printSql: boolean): Promise<{ pages: PerStep; statements: PerStep }> {
  const dir = mkdtempSync(join(tmpdir(), "mosoo-wal-pages-"));
  const file = join(dir, "api.db");
  const world = createTestWorld({ dbFile: file });
  try {
    const { sqlite } = world.store;
    const pageSize = sqlite.pragma("page_size", { simple: true }) as number;
    const pages = (): number => {
      const bytes = statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0;
      return bytes <= 32 ? 0 : (bytes - 32) / (24 + pageSize);
    };
    const totals = Object.fromEntries(STEPS.map((s) => [s, 0])) as PerStep;
    const statements = Object.fromEntries(STEPS.map((s) => [s, 0])) as PerStep;
    const meter = installDbTimeMeter(sqlite);
    let first = true;
    const step = async <T>(name: (typeof STEPS)[number], fn: () => T | Promise<T>): Promise<T> => {
      sqlite.pragma("wal_checkpoint(TRUNCATE)");
      meter.reset();
      const out = await fn();
      statements[name] += meter.counts().statements;
      if (printSql && first)
        for (const st of meter.topStatements(100))
          if (!st.sql.startsWith("(")) process.stdout.write(`  ${name}: ${st.calls}× ${st.sql.replace(/\s+/g, " ").slice(0, 220)}\n`);
      totals[name] += pages();
      return out;
    };
    const rt = world.runtime;
    const { driverToken } = await rt.drivers.register({ name: "wal-pages" }, { kind: "enrollment" });
    const { connectionId } = await rt.drivers.connect(await rt.drivers.authenticate(driverToken));
    const instance = await rt.drivers.authenticate(driverToken);
    const { runId } = await rt.runs.createRun({ driverInstanceId: instance.id });
    const result = { outputText: "ok", requestId: "r", serverId: "tracker", toolName: "createIssue" };
    for (let i = 0; i < n; i++) {
      const call = await step("enqueue", () =>
        rt.runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: { n: i }, requestId: "r" }),
      );
      await step("deliver", () => rt.commands.nextCommand(instance, connectionId, 0));
      const claim = await step("claim", () => rt.ledger.claim(instance, connectionId, call.commandId));
      if (claim.kind !== "execute") throw new Error(`expected an execute claim, got ${claim.kind}`);
      await step("complete", () =>
        rt.ledger.complete(instance, call.effectId, { connectionId, attempt: claim.attempt, result, receipt: null }),
      );
      await step("terminal", () => rt.commands.updateCommand(instance, call.commandId, { connectionId, status: "completed", result }));
      first = false;
    }
    const mean = (t: PerStep) => Object.fromEntries(STEPS.map((s) => [s, t[s] / n])) as PerStep;
    return { pages: mean(totals), statements: mean(statements) };
  } finally {
    world.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const positive = (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("must be a positive integer");
  return n;
};

const program = new Command("wal-pages")
  .description("WAL pages appended per step of one mcp.execute lifecycle on a file-backed store (mean over N lifecycles)")
  .option("--lifecycles <n>", "how many lifecycles to average", positive, 100)
  .option("--sql", "also print the statements of the first lifecycle, by step", false)
  .action(async (opts: { lifecycles: number; sql: boolean }) => {
    const { pages, statements } = await measure(opts.lifecycles, opts.sql);
    const sum = (t: PerStep) => t.enqueue + t.claim + t.complete + t.terminal;
    for (const s of STEPS) process.stdout.write(`${s.padEnd(9)} ${pages[s].toFixed(2)} pages, ${statements[s].toFixed(2)} statements\n`);
    process.stdout.write(
      `lifecycle ${sum(pages).toFixed(2)} pages, ${sum(statements).toFixed(2)} statements (enqueue + claim + complete + terminal; delivery excluded, as in the ledger bench; BEGIN and COMMIT count as statements)\n`,
    );
  });

await program.parseAsync(process.argv);
