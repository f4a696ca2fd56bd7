/**
 * Child process of `long-poll-heap.test.ts` (run with `node --expose-gc --import tsx`): drives
 * `N` long-polls through the real command queue (`nextCommand` on an in-memory store, as the HTTP
 * route calls it, each with its own request `AbortSignal`, ended the way a Driver that goes away
 * ends one: the request aborts) and prints one JSON line with the heap used after a full GC before
 * and after them (bytes). Usage: `long-poll-heap.main.ts [polls=50000] [warmup=5000]`.
 */
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { createTestWorld } from "../kit/index.js";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  process.stderr.write("run with --expose-gc\n");
  process.exit(2);
}
const polls = Number(process.argv[2] ?? 50_000);
const warmup = Number(process.argv[3] ?? 5_000);

const f = createTestWorld();
const { runtime } = f;
const { driverToken } = await runtime.drivers.register({ name: "heap" }, { kind: "enrollment" });
const instance = await runtime.drivers.authenticate(driverToken);
const { connectionId } = await runtime.drivers.connect(instance);

async function pollOnce(): Promise<void> {
  const request = new AbortController();
  const answer = runtime.commands.nextCommand(instance, connectionId, 30_000, request.signal);
  // its first delivery attempt (one store transaction) ends within this turn: the poll is now waiting on the notifier
  await new Promise((resolve) => setImmediate(resolve));
  request.abort(); // the Driver went away (or its request timed out)
  if ((await answer) !== null) throw new Error("no command was queued; the poll must answer null");
}

async function heapAfterGc(): Promise<number> {
  for (let i = 0; i < 4; i += 1) {
    gc!();
    await yieldToLoop();
  }
  return process.memoryUsage().heapUsed;
}

for (let i = 0; i < warmup; i += 1) await pollOnce();
const before = await heapAfterGc();
const startedAt = performance.now();
for (let i = 0; i < polls; i += 1) await pollOnce();
const seconds = (performance.now() - startedAt) / 1000;
const after = await heapAfterGc();
f.close();
process.stdout.write(
  `${JSON.stringify({ polls, warmup, heapBefore: before, heapAfter: after, growth: after - before, bytesPerPoll: (after - before) / polls, seconds })}\n`,
);
