/**
 * Crash-point matrix rows for task-augmented tool calls (docs/DESIGN.md §4 "Tasks", docs/MCP-TASKS.md).
 *
 * Each row drives one tool call through the Driver protocol against a real runtime on each store
 * (helpers/crash-lab.ts): a file-backed SQLite store, and the real PostgreSQL server of the test run
 * (one database for this file, emptied by each lab; each "API process" is a new connection pool on
 * it, so a crash ends every connection of the dead process). It sends it task-augmented to the REAL fixture provider (MCP over
 * HTTP, `--task-support optional`; the provider and its tasks survive every crash), crashes the API
 * and the Driver at the row's point, recovers in both modes (`reconnect`: the same Driver instance
 * reconnects and handles its redelivery; `driver_gone`: its heartbeat expires and the sweep repairs)
 * with the built-in `mcp-tasks` reconciler bound to the server, and checks the outcome:
 * - the task id was not stored yet → the effect stays `unknown` (fenced; no handle to ask about);
 * - stored → `succeeded` (reconciled) with the task's result and a receipt naming the task;
 * - the task still working → `still_unknown` `task_working`, next lookup no earlier than the task's
 *   poll interval; once the provider ends the task, the next lookup settles it;
 * - the task expired → `still_unknown` `task_expired`, never `not_executed`.
 * In every row the provider wrote once and the effect was never `not_executed` (the audit trigger of
 * helpers/crash-lab-checks.ts, on both stores). Every read goes through the store port, the same on both.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { IDEMPOTENCY_KEY_META } from "@mosoo/contracts";
import { mcpTasksAdapterFactory } from "@mosoo/effect-reconciliation/host";
import { startFixtureProvider, type FixtureProviderHandle } from "@mosoo/fixture-provider";
import { useTestDatabase, type TestDatabase } from "@mosoo/test-postgres";
import { asc, eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CrashLab, type LabStore, type RecoveryMode } from "./helpers/crash-lab.js";
import { labAudit } from "./helpers/crash-lab-checks.js";

type TaskRow = "before_task_id_stored" | "after_task_id_stored" | "task_still_working" | "task_expired";
const ROWS: readonly TaskRow[] = ["before_task_id_stored", "after_task_id_stored", "task_still_working", "task_expired"];
const MODES: readonly RecoveryMode[] = ["reconnect", "driver_gone"];
/** The provider's suggested poll interval (ms): longer than the lab's largest backoff (8 s), so a retry-after from it is visible. */
const POLL_INTERVAL_MS = 20_000;

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

/** Waits (real time, bounded) until `predicate` holds: the provider's background work is real. */
async function until(predicate: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !predicate(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!predicate()) throw new Error(`timed out waiting for ${what}`);
}

/** The effect's row as the checks read it (through the store port, either store), in the snake_case shape the expectations use. */
async function effectRow(lab: CrashLab, effectId: string) {
  const r = (
    await lab.store.read((tx) => tx.db.select().from(tx.tables.externalToolEffects).where(eq(tx.tables.externalToolEffects.id, effectId)))
  )[0]!;
  return {
    status: r.status,
    resolution: r.resolution,
    task_id: r.taskId,
    next_lookup_at_ms: r.nextLookupAtMs === null ? null : Number(r.nextLookupAtMs),
    reconciliation_receipt_json: r.reconciliationReceiptJson,
    result_json: r.resultJson,
  };
}

/** The effect's reconciliation records in order (through the store port). */
async function recordRows(lab: CrashLab, effectId: string) {
  const rows = await lab.store.read((tx) => {
    const t = tx.tables.effectReconciliations;
    return tx.db.select().from(t).where(eq(t.effectId, effectId)).orderBy(asc(t.id));
  });
  return rows.map((r) => ({
    outcome: r.outcome,
    reason_code: r.reasonCode,
    started_at_ms: Number(r.startedAtMs),
    next_lookup_at_ms: r.nextLookupAtMs === null ? null : Number(r.nextLookupAtMs),
  }));
}

/** Runs one row under one recovery mode on `store`; returns what the checks read. */
async function runRow(row: TaskRow, mode: RecoveryMode, provider: FixtureProviderHandle, store: LabStore) {
  const adapter = await mcpTasksAdapterFactory.discover({ url: provider.url }, { signal: AbortSignal.timeout(10_000) });
  let lookups = 0;
  const lab = new CrashLab("lookup_only", "ok", {
    adapter: { declaration: adapter.declaration, lookup: (r, c) => ((lookups += 1), adapter.lookup(r, c)) },
    lookupTimeoutMs: 10_000,
    store,
  });
  open.push({ close: () => lab.dispose() });
  await lab.setup();
  const call = await lab.runtime.runs.enqueueToolCall(lab.runId!, {
    serverId: "tracker",
    toolName: "createIssue",
    arguments: { title: "Disk full", body: "on /var" },
    requestId: "req-1",
  });
  const driver = lab.driver!;
  const instance = () => lab.runtime.drivers.authenticate(driver.token);
  const env = (await lab.deliver())!;
  await lab.runtime.commands.updateCommand(await instance(), env.commandId, { connectionId: driver.connectionId, status: "accepted" });
  const claim = await lab.runtime.ledger.claim(await instance(), driver.connectionId, env.commandId);
  if (claim.kind !== "execute") throw new Error(`expected an execute claim, got ${claim.kind}`);

  // The Driver's task-augmented tools/call (apps/driver mcp-task-call.ts): the key in _meta, the task answered at once.
  const client = new Client({ name: "lab-driver", version: "0.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(provider.url)));
  const created = await client.request(
    {
      method: "tools/call",
      params: {
        name: "createIssue",
        arguments: { title: "Disk full", body: "on /var" },
        _meta: { [IDEMPOTENCY_KEY_META]: claim.idempotencyKey },
      },
    },
    CreateTaskResultSchema,
    { task: { ttl: 60_000 } },
  );
  await client.close();
  const taskId = created.task.taskId;
  if (row !== "before_task_id_stored") {
    const stored = await lab.runtime.ledger.taskCreated(await instance(), claim.effectId, {
      connectionId: driver.connectionId,
      attempt: claim.attempt,
      taskId,
    });
    expect(stored).toEqual({ outcome: "applied", status: "executing" });
  }
  if (row !== "task_still_working") await until(() => provider.stats().writes[claim.idempotencyKey] === 1, "the provider's write");
  if (row === "task_expired") provider.setFaults({ expireTasks: true });
  await lab.crash(`${row}: the Driver and the API died while the task ran`);

  await lab.recover(mode);
  const effect = await effectRow(lab, claim.effectId);
  const records = await recordRows(lab, claim.effectId);
  const everNotExecuted = (await labAudit(lab)).filter((a) => a.id === claim.effectId && a.new_status === "not_executed").length;
  return {
    lab,
    effect,
    records,
    everNotExecuted,
    taskId,
    key: claim.idempotencyKey,
    effectId: claim.effectId,
    lookups: () => lookups,
  };
}

/** Rows run per store (printed once at the end: the figures of docs/testing.md). */
const ran = { sqlite: 0, postgres: 0 };
afterAll(() => console.log(`crash-point rows for tasks: ${ran.sqlite} on sqlite, ${ran.postgres} on postgres`));

describe.each(["sqlite", "postgres"] as const)("on %s", (kind) => {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    if (kind === "postgres") database = await useTestDatabase("crash_tasks");
  }, 120_000);
  afterAll(async () => {
    await database?.drop();
  });
  const labStore = (): LabStore => (kind === "postgres" ? { kind, url: database!.url } : { kind: "sqlite" });

  describe(
    `crash-point matrix on ${kind}, task-augmented calls (real fixture provider, mcp-tasks reconciler, both recovery modes)`,
    { timeout: 120_000 },
    () => {
      it.each(ROWS.flatMap((row) => MODES.map((mode) => ({ row, mode }))))("crash $row / $mode", async ({ row, mode }) => {
        const dir = mkdtempSync(join(tmpdir(), "mosoo-task-crash-"));
        open.push({ close: async () => rmSync(dir, { recursive: true, force: true }) });
        const provider = await startFixtureProvider({
          dbFile: join(dir, "provider.db"),
          taskSupport: "optional",
          taskPollIntervalMs: POLL_INTERVAL_MS,
          ...(row === "task_still_working" ? { faults: { holdBeforeCommit: true } } : {}),
        });
        open.push(provider);
        const r = await runRow(row, mode, provider, labStore());
        const label = `${kind}: ${row}/${mode}`;
        expect(r.everNotExecuted, label).toBe(0);
        expect(r.lookups(), label).toBeGreaterThan(0);
        switch (row) {
          case "before_task_id_stored":
            expect(r.effect, label).toMatchObject({ status: "unknown", resolution: null, task_id: null });
            expect(new Set(r.records.map((x) => x.reason_code)), label).toEqual(new Set(["no_task_handle"]));
            expect(provider.stats().writes[r.key], label).toBe(1); // the write happened; without the handle the fence holds
            break;
          case "after_task_id_stored": {
            expect(r.effect, label).toMatchObject({ status: "succeeded", resolution: "reconciled", task_id: r.taskId });
            const receipt = JSON.parse(String(r.effect.reconciliation_receipt_json)) as Record<string, unknown>;
            expect(receipt, label).toMatchObject({ providerOperationId: r.taskId, detail: { taskStatus: "completed" } });
            expect(JSON.parse(String(r.effect.result_json)), label).toMatchObject({ outputText: expect.stringContaining("Disk full") });
            expect(provider.stats().writes[r.key], label).toBe(1);
            break;
          }
          case "task_still_working": {
            expect(r.effect, label).toMatchObject({ status: "unknown", resolution: null, task_id: r.taskId });
            expect(new Set(r.records.map((x) => x.reason_code)), label).toEqual(new Set(["task_working"]));
            const last = r.records.at(-1)!;
            // the next lookup waits the task's poll interval (longer than any backoff of the lab; the lab's clock is manual)
            expect(last.next_lookup_at_ms, label).toBe(last.started_at_ms + POLL_INTERVAL_MS);
            expect(r.effect.next_lookup_at_ms, label).toBe(last.next_lookup_at_ms);
            // the provider ends the task: the next due lookup settles the effect from tasks/result
            provider.release();
            await until(() => provider.stats().writes[r.key] === 1, "the released write");
            await until(() => provider.provider.heldCount === 0, "the release");
            r.lab.clock.advance(POLL_INTERVAL_MS + 1);
            for (let i = 0; i < 50; i++) {
              await r.lab.runtime.sweep.sweepOnce();
              if ((await effectRow(r.lab, r.effectId)).status !== "unknown") break;
              await new Promise((resolve) => setTimeout(resolve, 20)); // the task's result is stored by the provider's background work
              r.lab.clock.advance(POLL_INTERVAL_MS + 1);
            }
            const settled = await effectRow(r.lab, r.effectId);
            expect({ status: settled.status, resolution: settled.resolution }, label).toEqual({
              status: "succeeded",
              resolution: "reconciled",
            });
            break;
          }
          case "task_expired":
            expect(r.effect, label).toMatchObject({ status: "unknown", resolution: null, task_id: r.taskId });
            expect(new Set(r.records.map((x) => x.reason_code)), label).toEqual(new Set(["task_expired"]));
            expect(provider.stats().writes[r.key], label).toBe(1);
            break;
        }
        ran[kind] += 1;
      });
    },
  );
});
