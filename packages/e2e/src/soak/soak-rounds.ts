// The soak's rounds: enqueue tool calls, kill and restart a Driver (and sometimes an API instance), and the database faults due.
import type { RunningPostgres } from "@mosoo/test-postgres";
import { applyDbFault, planDbFaults, type AppliedDbFault } from "./soak-faults.js";
import type { SoakOptions } from "./soak-options.js";
import type { SoakDriverSlot } from "./soak-processes.js";
import { rng, sleep, type SoakStack, type SoakTally } from "./soak-stack.js";

/**
 * Enqueues `n` tool calls on `slot`'s run (created first when it has none), each on a random API
 * instance. A run that ended (`run.not_active`: its Driver was finalized) is dropped so the next call
 * makes a new one; any other failure leaves the run as it is. Counts what was enqueued in `tally`.
 */
async function enqueueToolCalls(opts: SoakOptions, stack: SoakStack, tally: SoakTally, slot: SoakDriverSlot, n: number): Promise<void> {
  for (let j = 0; j < n; j++) {
    const runs = stack.pick(stack.runClients); // any instance: one store, one ledger
    try {
      if (!slot.runId) slot.runId = (await runs.createRun(slot.instanceId!)).runId;
      await runs.enqueueToolCall(slot.runId, {
        serverId: "tracker",
        toolName: "createIssue",
        arguments: { title: `soak ${tally.enqueued}`, body: `seed ${opts.seed}` },
      });
      tally.enqueued += 1;
    } catch (error) {
      // the run ended (its Driver was finalized): a new one next time; any other failure (an API
      // restarting, a database fault) leaves the run as it is
      if (String(error).includes("run.not_active")) slot.runId = null;
    }
  }
}

/**
 * Database faults: planned from the seed, started when their kill count (`tally.driverKills`) is
 * reached, one at a time, while the rounds go on. `startDue(true)` starts the next one regardless;
 * `finish` starts every one left and waits for the last. None without a PostgreSQL server.
 */
export function scheduleDbFaults(opts: SoakOptions, pgServer: RunningPostgres | null, tally: SoakTally) {
  const plan = pgServer && opts.dbFaults ? planDbFaults(opts.dbFaults, opts.kills, rng(opts.seed ^ 0x5eed)) : [];
  const applied: AppliedDbFault[] = [];
  let nextFault = 0;
  let faultRunning: Promise<void> = Promise.resolve();
  const startDue = async (force: boolean) => {
    const fault = plan[nextFault];
    if (!pgServer || !fault || (!force && fault.atKill > tally.driverKills)) return;
    await faultRunning;
    nextFault += 1;
    faultRunning = applyDbFault(pgServer, fault).then(
      (a) => {
        applied.push(a);
        opts.log(`soak: database fault ${applied.length}/${plan.length}: ${a.kind}, ${a.detail}`);
      },
      (error: unknown) => opts.log(`soak: database fault ${fault.kind} failed: ${String(error)}`),
    );
  };
  const finish = async () => {
    while (nextFault < plan.length) await startDue(true);
    await faultRunning;
  };
  return { plan, applied, startDue, finish };
}

/**
 * One round: every dead Driver restarted, a random provider commit delay, 1–3 tool calls per Driver,
 * a random pause, then SIGKILL of a random Driver (and, at `apiKillRatio`, of a random API instance);
 * both come back side by side, the Driver at once or (at `lateRestartRatio`) only after the TTL.
 */
export async function runKillRound(opts: SoakOptions, stack: SoakStack, tally: SoakTally, instanceCount: number): Promise<void> {
  const { random, pick, drivers, apis } = stack;
  for (const slot of drivers.slots) if (!drivers.alive(slot)) await drivers.start(slot);
  await stack.control.setFaults({ delayBeforeCommitMs: pick([0, 0, 0, 20, 80, 250]) }).catch(() => undefined);
  for (const slot of drivers.slots) await enqueueToolCalls(opts, stack, tally, slot, 1 + Math.floor(random() * 3));
  await sleep(Math.floor(random() * 300));
  const victim = pick(drivers.slots);
  const killApi = random() < opts.apiKillRatio;
  await drivers.stop(victim, "SIGKILL");
  tally.driverKills += 1;
  const apiVictim = Math.floor(random() * instanceCount);
  if (killApi && apis[apiVictim]) {
    await apis[apiVictim].kill("SIGKILL");
    tally.apiKills += 1;
  }
  const late = random() < stack.lateRatio;
  // the API instance and the Driver come back side by side (the Driver fails over to another instance
  // meanwhile): a Driver waiting for an API restart first would overrun the TTL on a loaded machine
  await Promise.all([
    killApi ? stack.startApi(apiVictim) : undefined,
    (async () => {
      if (late) await sleep(stack.ttlMs + 700); // the sweep finalizes the dead Driver before it comes back
      await drivers.start(victim);
    })(),
  ]);
}
