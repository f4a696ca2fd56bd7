/**
 * `npm run db:wal-pages` (in apps/api): how many WAL pages and statements each step of one `mcp.execute`
 * lifecycle costs on a file-backed store: enqueue (intent + command), delivery, claim, complete, terminal
 * `completed` update, through the real services of the test kit's world (reconciliation off); the measuring
 * is `measureLifecycleWrites` (bench/lifecycle-writes.measure.ts, which the ledger bench row shares). Prints
 * the mean per step over `--lifecycles` (default 100) and their sum without the delivery (the figure the
 * docs/performance-notes.md quotes), statements with and without BEGIN and COMMIT (`--sql` lists them).
 * Deterministic but for the odd B-tree page split; no timing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command, InvalidArgumentError } from "commander";
import { createTestWorld } from "../tests/kit/world.js";
import { LIFECYCLE_STEPS, lifecycleSum, measureLifecycleWrites, type LifecycleWrites } from "../bench/lifecycle-writes.measure.js";

/** Mean WAL pages and statements per lifecycle step over `n` lifecycles on a fresh store in a temp folder (removed after). */
async function measure(n: number, printSql: boolean): Promise<LifecycleWrites> {
  const dir = mkdtempSync(join(tmpdir(), "mosoo-wal-pages-"));
  const file = join(dir, "api.db");
  const world = createTestWorld({ dbFile: file });
  try {
    return await measureLifecycleWrites(world.runtime, world.store.sqlite, file, {
      n,
      serverId: "tracker",
      toolName: "createIssue",
      ...(printSql
        ? {
            onSql: (step: string, calls: number, sql: string) =>
              process.stdout.write(`  ${step}: ${calls}× ${sql.replace(/\s+/g, " ").slice(0, 220)}\n`),
          }
        : {}),
    });
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
    const { pages, statements, dataStatements } = await measure(opts.lifecycles, opts.sql);
    for (const s of LIFECYCLE_STEPS)
      process.stdout.write(
        `${s.padEnd(9)} ${pages[s].toFixed(2)} pages, ${statements[s].toFixed(2)} statements (${dataStatements[s].toFixed(2)} without BEGIN/COMMIT)\n`,
      );
    process.stdout.write(
      `lifecycle ${lifecycleSum(pages).toFixed(2)} pages, ${lifecycleSum(statements).toFixed(2)} statements, ${lifecycleSum(dataStatements).toFixed(2)} without BEGIN/COMMIT (enqueue + claim + complete + terminal; delivery excluded, as in the ledger bench)\n`,
    );
  });

await program.parseAsync(process.argv);
