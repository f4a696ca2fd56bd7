/**
 * `npm run db:wal-pages` (in apps/api): how many WAL pages each step of one `mcp.execute` lifecycle
 * appends on a file-backed store ("leaner writes"): enqueue (intent + command), delivery,
 * claim, complete, terminal `completed` update, through the real services of the test kit's world
 * (reconciliation off). Before each step the WAL is checkpointed and truncated (`wal_checkpoint(TRUNCATE)`),
 * so the WAL's size after it is that step's pages: (bytes − 32) / (24 + page size). Prints the mean
 * per step over `--lifecycles` (default 100) and their sum without the delivery (the figure the
 * docs/performance-notes.md quotes). Deterministic but for the odd B-tree page split; no timing.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command, InvalidArgumentError } from "commander";
import { createTestWorld } from "../tests/kit/world.js";

const STEPS = ["enqueue", "deliver", "claim", "complete", "terminal"] as const;

/** Mean WAL pages per lifecycle step over `n` lifecycles on a fresh store in a temp folder (removed after). */
async function measure(n: number): Promise<Record<(typeof STEPS)[number], number>> {
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
    const totals = Object.fromEntries(STEPS.map((s) => [s, 0])) as Record<(typeof STEPS)[number], number>;
    const step = async <T>(name: (typeof STEPS)[number], fn: () => T | Promise<T>): Promise<T> => {
      sqlite.pragma("wal_checkpoint(TRUNCATE)");
      const out = await fn();
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
    }
    return Object.fromEntries(STEPS.map((s) => [s, totals[s] / n])) as Record<(typeof STEPS)[number], number>;
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
  .action(async (opts: { lifecycles: number }) => {
    const perStep = await measure(opts.lifecycles);
    const lifecycle = perStep.enqueue + perStep.claim + perStep.complete + perStep.terminal;
    for (const s of STEPS) process.stdout.write(`${s.padEnd(9)} ${perStep[s].toFixed(2)} pages\n`);
    process.stdout.write(
      `lifecycle ${lifecycle.toFixed(2)} pages (enqueue + claim + complete + terminal; delivery excluded, as in the ledger bench)\n`,
    );
  });

await program.parseAsync(process.argv);
