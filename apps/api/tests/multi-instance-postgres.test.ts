// Several API instances on ONE PostgreSQL database (docs/DESIGN.md §11), on the real server: two
// runtimes, each with its own pool (PostgresStore) and its own LISTEN/NOTIFY wake-ups. A command queued
// through instance A wakes a long-poll held on instance B; two instances racing to finalize one Driver
// repair it once.
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase, type TestDatabase } from "@mosoo/test-postgres";
import { createRuntime, type Runtime } from "../src/composition-root.js";
import { openPostgresStore, type PostgresStore } from "../src/platform/db/postgres/postgres-store.js";
import { PgCommandWakeups } from "../src/platform/db/postgres/pg-command-wakeups.js";
import { connectDriver, deliverAcceptClaim, enqueueCreateIssue } from "./kit/index.js";

interface Instance {
  store: PostgresStore;
  wakeups: PgCommandWakeups;
  runtime: Runtime;
}

let db: TestDatabase;
const instances: Instance[] = [];

async function startInstance(name: string): Promise<Instance> {
  const store = await openPostgresStore(db.url, { poolSize: 4, applicationName: `api-${name}` });
  const wakeups = new PgCommandWakeups({ connectionString: db.url, applicationName: `wakeups-${name}` });
  await wakeups.start();
  const runtime = createRuntime({ store, logger: pino({ level: "silent" }), heartbeatTtlMs: 3_600_000, wakeups });
  const instance = { store, wakeups, runtime };
  instances.push(instance);
  return instance;
}

beforeAll(async () => {
  db = await useTestDatabase("multi_instance");
}, 120_000);

afterAll(async () => {
  for (const i of instances) {
    i.runtime.ctx.shutdown.abort();
    await i.wakeups.close();
    await i.store.close();
  }
  await db?.drop();
}, 60_000);

describe("two API instances on one PostgreSQL database (real server)", () => {
  it("a command queued through instance A wakes a long-poll held on instance B", async () => {
    const a = await startInstance("a");
    const b = await startInstance("b");
    const driver = await connectDriver(b.runtime); // the Driver talks to B
    const { runId } = await a.runtime.runs.createRun({ driverInstanceId: driver.instance.id });
    // B's long-poll (10 min: it can only end by a wake-up within the test's timeout) has read the store and found nothing
    let readDone!: () => void;
    const firstRead = new Promise<void>((r) => (readDone = r));
    b.store.observeDurableWrites({ beforeCommit: () => undefined, afterCommit: () => readDone() });
    const poll = b.runtime.commands.nextCommand(driver.instance, driver.connectionId, 600_000);
    await firstRead;
    b.store.observeDurableWrites(null);
    // the tool call is queued through A (the agent's API instance)
    const call = await a.runtime.runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: { title: "t" } });
    const envelope = await poll;
    expect(envelope?.commandId).toBe(call.commandId);
  });

  it("two instances racing to finalize one Driver repair it once: one run.failed, each command failed once", async () => {
    const [a, b] = instances as [Instance, Instance];
    const driver = await connectDriver(a.runtime);
    const { runId } = await enqueueCreateIssue(a.runtime, driver);
    await deliverAcceptClaim(a.runtime, driver); // the effect is executing when the Driver dies
    const [sa, sb] = await Promise.all([
      a.runtime.repair.finalize(driver.instance.id, "driver_request"),
      b.runtime.repair.finalize(driver.instance.id, "heartbeat_expired"),
    ]);
    expect(sa.effectsFenced + sb.effectsFenced).toBe(1);
    expect(sa.commandsFailed + sb.commandsFailed).toBe(1);
    expect(sa.runsFailed + sb.runsFailed).toBe(1);
    const view = await a.runtime.runs.getRunView(runId);
    expect(view.events.filter((e) => e.type === "run.failed")).toHaveLength(1);
  });
});
