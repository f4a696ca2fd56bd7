/**
 * `npm run bench`: throughput of the effect ledger's hot paths on a file-backed SQLite store
 * (WAL, synchronous=FULL), measured with tinybench. Prints tinybench's table (throughput and
 * latency per task) and the store's size in bytes. Timings are reported here, never asserted in tests.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { Bench } from "tinybench";
import { createProviderDouble, createProviderDoubleAdapter } from "@mosoo/effect-reconciliation/testing";
import { openStore } from "../src/platform/db/database.js";
import { createRuntime } from "../src/modules/runtime/application/runtime.js";
import { RECONCILIATION_OFF } from "../src/modules/reconciliation/application/reconciliation-settings.js";

const dir = mkdtempSync(join(tmpdir(), "mosoo-bench-"));
const dbFile = join(dir, "bench.db");
const store = openStore(dbFile);
const double = createProviderDouble();
const adapter = createProviderDoubleAdapter(double);
const runtime = createRuntime({
  db: store.db,
  logger: pino({ level: "silent" }),
  heartbeatTtlMs: 60_000,
  reconciliation: { ...RECONCILIATION_OFF, enabled: true, bindings: new Map([["tracker", adapter]]) },
});
const toolName = adapter.declaration.tools[0]!;

function newDriver() {
  const { driverToken } = runtime.drivers.register({ name: "bench" });
  const instance = runtime.drivers.authenticate(driverToken);
  const { connectionId } = runtime.drivers.connect(instance);
  const { runId } = runtime.runs.createRun({ driverInstanceId: instance.id });
  return { instance: runtime.drivers.authenticate(driverToken), connectionId, runId, token: driverToken };
}

const main = newDriver();
const result = { outputText: "ok", requestId: "r", serverId: "tracker", toolName };
let n = 0;

const bench = new Bench({ time: 1_500, warmupTime: 200 });
bench
  .add("enqueue mcp.execute (intent + command, one transaction)", () => {
    runtime.runs.enqueueToolCall(main.runId, { serverId: "tracker", toolName, arguments: { n: n++ } });
  })
  .add("full happy path: enqueue, deliver, accept, claim, complete, terminal update", async () => {
    const call = runtime.runs.enqueueToolCall(main.runId, { serverId: "tracker", toolName, arguments: { n: n++ }, requestId: "r" });
    await runtime.commands.nextCommand(main.instance, main.connectionId, 0);
    runtime.commands.updateCommand(main.instance, call.commandId, { connectionId: main.connectionId, status: "accepted" });
    const claim = await runtime.ledger.claim(main.instance, main.connectionId, call.commandId);
    if (claim.kind !== "execute") throw new Error("expected execute");
    runtime.ledger.complete(main.instance, call.effectId, { connectionId: main.connectionId, attempt: claim.attempt, result, receipt: null });
    runtime.commands.updateCommand(main.instance, call.commandId, { connectionId: main.connectionId, status: "completed", result });
  })
  .add("finalization repair of a Driver with 20 in-flight effects, each reconciled (provider double)", async () => {
    const d = newDriver();
    for (let i = 0; i < 20; i++) {
      const args = { n: n++ };
      const call = runtime.runs.enqueueToolCall(d.runId, { serverId: "tracker", toolName, arguments: args });
      await runtime.commands.nextCommand(d.instance, d.connectionId, 0);
      const claim = await runtime.ledger.claim(d.instance, d.connectionId, call.commandId);
      if (claim.kind === "execute" && i % 2 === 0) double.commit(claim.idempotencyKey, args);
    }
    await runtime.repair.finalize(d.instance.id, "operator");
  });

console.log(`benchmarking on ${dbFile} ...`);
await bench.run();
console.table(bench.table());
console.log(`store size after the run: ${statSync(dbFile).size} bytes (+ WAL ${statSync(`${dbFile}-wal`, { throwIfNoEntry: false })?.size ?? 0} bytes)`);
store.close();
rmSync(dir, { recursive: true, force: true });
