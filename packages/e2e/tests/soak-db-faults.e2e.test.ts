// The soak's database faults: the seeded plan, the two verdicts (unknown-but-committed effects, healthy
// Drivers finalized) on hand-made histories, and a short real run on PostgreSQL with one fault of each
// kind (crash and restart, terminate the API's backends, pause) and Driver kills, asserting every
// invariant of the summary line.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { ProviderTruth } from "../src/soak/soak-counts.js";
import { planDbFaults } from "../src/soak/soak-faults.js";
import { runSoak } from "../src/soak/soak-runner.js";
import { healthyFinalized, soakVerdictFailed, unknownCommitted, type LedgerAttempt } from "../src/soak/soak-verdicts.js";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A PRNG that replays a fixed list (cycling). */
const replay = (xs: number[]) => {
  let i = 0;
  return () => xs[i++ % xs.length]!;
};

describe("planDbFaults", () => {
  it("spreads N faults over the kills, draws kind and duration from the PRNG within their bounds, and is reproducible", () => {
    const plan = planDbFaults(4, 100, replay([0, 0, 0.5, 0.99, 0.9, 0.5, 0.4, 0.99]));
    expect(plan).toEqual([
      { kind: "pause", atKill: 0, durationMs: 5_000 },
      { kind: "crash", atKill: 25, durationMs: 9_920 },
      { kind: "terminate", atKill: 50, durationMs: 0 },
      { kind: "crash", atKill: 75, durationMs: 5_200 },
    ]);
    const seeded = () => planDbFaults(50, 1000, replay([0.1, 0.7, 0.35, 0.92, 0.61]));
    expect(seeded()).toEqual(seeded());
  });
});

const committed: ProviderTruth = { commits: 1, createCalls: 1, outputText: "created issue 1" };
const none: ProviderTruth = { commits: 0, createCalls: 0, outputText: null };
const attempt = (over: Partial<LedgerAttempt>): LedgerAttempt => ({
  effectId: "e1",
  idempotencyKey: "k1",
  driverInstanceId: "d1",
  effectStatus: "unknown",
  effectResolution: null,
  status: "unknown",
  startedAtMs: 10_000,
  finishedAtMs: 20_000,
  ...over,
});

describe("unknownCommitted", () => {
  it.each<[string, LedgerAttempt[], ProviderTruth, Array<{ instanceId: string; atMs: number }>, string[]]>([
    ["unknown, committed, no kill: the Driver dropped the answer", [attempt({})], committed, [], ["e1"]],
    ["unknown, committed, its Driver killed during the attempt", [attempt({})], committed, [{ instanceId: "d1", atMs: 15_000 }], []],
    ["unknown, committed, a kill of another Driver", [attempt({})], committed, [{ instanceId: "d2", atMs: 15_000 }], ["e1"]],
    ["unknown, committed, its Driver killed after the fence", [attempt({})], committed, [{ instanceId: "d1", atMs: 20_001 }], ["e1"]],
    [
      "unknown, committed, attempt still open, killed",
      [attempt({ finishedAtMs: null })],
      committed,
      [{ instanceId: "d1", atMs: 99_000 }],
      [],
    ],
    [
      "reconciled after a fence, committed, no kill",
      [attempt({ effectStatus: "succeeded", effectResolution: "reconciled" })],
      committed,
      [],
      ["e1"],
    ],
    ["unknown, not committed", [attempt({})], none, [], []],
    [
      "succeeded from the provider's result",
      [attempt({ effectStatus: "succeeded", effectResolution: "provider_result", status: "succeeded" })],
      committed,
      [],
      [],
    ],
  ])("%s", (_name, attempts, truth, kills, expected) => {
    expect(unknownCommitted(attempts, () => truth, kills)).toEqual(expected);
  });
});

describe("healthyFinalized", () => {
  const ttl = 10_000;
  const finalized = [{ id: "d1", finalizedAtMs: 100_000 }];
  it.each<[string, Array<{ instanceId: string; connectedAtMs: number; endedAtMs: number | null }>, string[]]>([
    ["connected a TTL before and still running: healthy", [{ instanceId: "d1", connectedAtMs: 50_000, endedAtMs: null }], ["d1"]],
    [
      "ended by itself after the finalization (it learnt of it): healthy",
      [{ instanceId: "d1", connectedAtMs: 50_000, endedAtMs: 100_500 }],
      ["d1"],
    ],
    ["killed before the finalization", [{ instanceId: "d1", connectedAtMs: 50_000, endedAtMs: 95_000 }], []],
    ["reconnected less than a TTL before", [{ instanceId: "d1", connectedAtMs: 95_000, endedAtMs: null }], []],
    ["another instance ran", [{ instanceId: "d2", connectedAtMs: 50_000, endedAtMs: null }], []],
  ])("%s", (_name, lives, expected) => {
    expect(healthyFinalized(finalized, lives, ttl)).toEqual(expected);
  });
});

describe("soak with database faults", () => {
  it("refuses database faults on SQLite", async () => {
    await expect(
      runSoak({ kills: 1, seed: 1, drivers: 1, apiKillRatio: 0, dbFaults: 1, workDir: tmpdir(), log: () => {} }),
    ).rejects.toThrow(/^soak\.db_faults_need_postgres:/);
  });

  it("short run on PostgreSQL: a crash, a terminate and a pause among Driver kills: 0 lost, duplicated, phantom, stuck, unknown-but-committed, healthy Drivers finalized", async () => {
    const workDir = mkdtempSync(join(tmpdir(), "mosoo-soak-faults-"));
    dirs.push(workDir);
    const report = await runSoak({
      kills: 4,
      seed: 62, // its plan: crash (down 2.5 s), terminate, pause (5 s)
      drivers: 2,
      apiKillRatio: 0.25,
      store: "postgres",
      apiInstances: 2,
      dbFaults: 3,
      lateRestartRatio: 0,
      reconciliation: false,
      workDir,
      log: () => {},
    });
    expect(report.faults).toEqual({ pause: 1, crash: 1, terminate: 1 });
    expect(report.driverKills).toBe(4);
    expect(report.recovered).toBe(true);
    expect(report.counts.effects).toBeGreaterThan(0);
    expect(report.counts, JSON.stringify(report.counts)).toMatchObject({ lost: 0, duplicated: 0, phantom: 0, stuck: 0 });
    expect(report.unknownCommitted).toEqual([]);
    expect(report.healthyFinalized).toEqual([]);
    expect(report.sameInstanceRestarts + report.finalizations).toBe(4);
    expect(soakVerdictFailed(report)).toBe(false);
  }, 360_000); // a bound for a hang: ~60-90 s on the loaded 2-core machine
});
