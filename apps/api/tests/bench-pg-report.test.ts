import { describe, expect, it } from "vitest";
import {
  isBaselineFigure,
  parseStoreChoice,
  pgLedgerRows,
  pgRecoveryRows,
  cpuMsPerOutcomeWithin,
  recoveryCpuBreakdown,
  scalingRatio,
} from "../bench/pg-bench.report.js";
import { statementKind } from "../bench/pg-recovery.counters.js";
import type { LatencyStats } from "../bench/ledger-cost.scenario.js";
import type { PgRecoveryResult } from "../bench/pg-recovery.scenario.js";

// The bench's PostgreSQL rows (docs/performance.md): option parsing and the ratios, over made-up
// numbers. Nothing here measures or asserts a timing.

const stats = (medianUs: number): LatencyStats => ({ medianUs, roundMediansUs: [medianUs], madUs: 1, p99Us: medianUs * 2, samples: 10 });

const recovery = (instances: number, wallMs: number, over: Partial<PgRecoveryResult> = {}): PgRecoveryResult => ({
  effects: 3000,
  instances,
  concurrency: 64,
  lookupLatencyMs: 10,
  wallMs,
  boundMs: (3000 * 10) / (64 * instances),
  resolved: 3000,
  lookupsRecorded: 3000,
  superseded: 0,
  supersededReasons: {},
  // 600 ms of CPU over 3000 effects, whatever the split: 0.2 ms per outcome
  perInstance: Array.from({ length: instances }, () => ({
    lookedUp: 3000 / instances,
    passes: 1,
    wallMs,
    peakRssBytes: 1,
    cpuUs: 600_000 / instances,
    idlePasses: 0,
    idlePassCpuUs: 0,
    idleCpuUsPerS: 0,
    quietCpuUsPerS: 0,
    warmCpuUs: 300_000 / instances,
    warmLookups: 1500 / instances,
    adapterLookups: 3000 / instances,
    statements: { roundTrips: 3000 / instances, statements: {}, rows: {}, failed: {} },
    systemCpuUs: 0,
    contextSwitches: { voluntary: 0, involuntary: 0 },
    timeline: [],
  })),
  loadAverage: { before: 1, after: 2 },
  ...over,
});

describe("bench --store", () => {
  it("accepts sqlite, postgres and all (blanks trimmed) and refuses anything else with the list", () => {
    expect(parseStoreChoice("sqlite")).toBe("sqlite");
    expect(parseStoreChoice(" postgres ")).toBe("postgres");
    expect(parseStoreChoice("all")).toBe("all");
    for (const bad of ["", "pg", "Postgres", "sqlite,postgres"])
      expect(() => parseStoreChoice(bad)).toThrow(/one of sqlite, postgres, all/);
  });
});

describe("scalingRatio: time with N instances over time with 1", () => {
  it("is the ratio of the medians, with each round's own ratio", () => {
    const s = scalingRatio([1000, 1200, 1100], [400, 900, 500]);
    expect(s.ratio).toBeCloseTo(500 / 1100, 10);
    expect(s.perRound).toEqual([0.4, 0.75, 500 / 1100]);
  });

  it("pairs rounds up to the shorter side and refuses an empty side or a non-positive time", () => {
    expect(scalingRatio([1000, 2000], [500]).perRound).toEqual([0.5]);
    expect(() => scalingRatio([], [1])).toThrow(RangeError);
    expect(() => scalingRatio([1000], [0])).toThrow(RangeError);
    expect(() => scalingRatio([Number.NaN], [1])).toThrow(RangeError);
  });
});

describe("pgRecoveryRows", () => {
  it("reports each instance count against its bound and the scaling against the 0.45× target", () => {
    const { rows, figures } = pgRecoveryRows([recovery(1, 10_000), recovery(3, 4_000), recovery(1, 12_000), recovery(3, 5_000)]);
    const byKey = Object.fromEntries(figures.map((f) => [f.key, f.value]));
    expect(Object.keys(byKey)).toEqual([
      "pg.recovery.1x@3k.ratio",
      "pg.recovery.1x@3k.cpuMsPerOutcome",
      "pg.recovery.3x@3k.ratio",
      "pg.recovery.3x@3k.cpuMsPerOutcome",
      "pg.recovery.scaling3of1@3k.ratio",
    ]);
    expect(byKey["pg.recovery.1x@3k.cpuMsPerOutcome"]).toBeCloseTo(0.2, 10);
    expect(byKey["pg.recovery.3x@3k.cpuMsPerOutcome"]).toBeCloseTo(0.2, 10);
    expect(rows[0]!.other).toContain("API CPU 0.200 ms/outcome");
    expect(byKey["pg.recovery.1x@3k.ratio"]).toBeCloseTo(10_000 / 468.75, 10); // lower median of 10 000 and 12 000
    expect(byKey["pg.recovery.3x@3k.ratio"]).toBeCloseTo(4_000 / 156.25, 10);
    expect(byKey["pg.recovery.scaling3of1@3k.ratio"]).toBeCloseTo(0.4, 10);
    expect(rows.at(-1)).toMatchObject({ ratio: "0.40×", target: "≤ 0.45×", met: "yes", other: "per round 0.40×/0.42×" });
    // CPU per outcome: one instance against 0.3 ms, three against 1.15× one instance's (0.2 ms each here)
    expect(rows[0]).toMatchObject({ target: "CPU ≤ 0.3 ms/outcome", met: "yes" });
    expect(rows[1]).toMatchObject({ target: "CPU ≤ 1.15× 1 instance's", met: "yes" });
  });

  it("the CPU rows are not met above 0.3 ms per outcome, nor when several instances do more work than one", () => {
    const heavy = (instances: number, cpuUs: number) =>
      recovery(instances, 4_000, {
        perInstance: recovery(instances, 4_000).perInstance.map((i) => ({ ...i, cpuUs: cpuUs / instances })),
      });
    const rows = pgRecoveryRows([heavy(1, 1_200_000), heavy(3, 1_500_000)]).rows;
    expect(rows[0]).toMatchObject({ met: "no" }); // 0.4 ms per outcome
    expect(rows[1]).toMatchObject({ met: "no" }); // 0.5 / 0.4 = 1.25×
  });

  it("is not met above the target, nor when a run left an effect unknown or recorded a lookup twice", () => {
    expect(pgRecoveryRows([recovery(1, 10_000), recovery(3, 5_000)]).rows.at(-1)!.met).toBe("no");
    expect(pgRecoveryRows([recovery(1, 10_000), recovery(3, 3_000, { resolved: 2999 })]).rows.at(-1)!.met).toBe("no");
    expect(pgRecoveryRows([recovery(1, 10_000, { lookupsRecorded: 3001 }), recovery(3, 3_000)]).rows.at(-1)!.met).toBe("no");
  });

  it("without a one-instance run there is no scaling row", () => {
    const { rows, figures } = pgRecoveryRows([recovery(3, 5_000)]);
    expect(rows).toHaveLength(1);
    expect(figures.map((f) => f.key)).toEqual(["pg.recovery.3x@3k.ratio", "pg.recovery.3x@3k.cpuMsPerOutcome"]);
  });
});

describe("pgLedgerRows", () => {
  it("gives ledger / floor per flag and size, met at or below 1.5×", () => {
    const { rows, figures } = pgLedgerRows({
      points: [
        { existingEffects: 0, floor: stats(1000), ledgerOff: stats(1400), ledgerOn: stats(1500) },
        { existingEffects: 10_000, floor: stats(1000), ledgerOff: stats(2100), ledgerOn: stats(2500) },
      ],
      loadAverage: { before: null, after: null },
      roundTrips: { enqueue: 4, deliver: 3, claim: 3, complete: 3, terminal: 3, lifecycle: 13 },
    });
    expect(figures.map((f) => [f.key, f.value])).toEqual([
      ["pg.ledger.on@0.ratio", 1.5],
      ["pg.ledger.on@10k.ratio", 2.5],
      ["pg.ledger.off@0.ratio", 1.4],
      ["pg.ledger.off@10k.ratio", 2.1],
      ["pg.ledger.on.roundTrips", 13],
    ]);
    expect(rows.map((r) => r.met)).toEqual(["yes", "no", "yes", "no", "yes"]);
    expect(rows[0]!.other).toContain("load n/a");
    expect(rows.at(-1)).toMatchObject({ measured: "13", floorOrBound: "pg floor 12", target: "≤ 14" });
  });

  it("the round-trips row is not met above 14", () => {
    const { rows } = pgLedgerRows({
      points: [],
      loadAverage: { before: null, after: null },
      roundTrips: { enqueue: 6, deliver: 3, claim: 3, complete: 3, terminal: 3, lifecycle: 15 },
    });
    expect(rows.at(-1)!.met).toBe("no");
  });
});

describe("isBaselineFigure", () => {
  it("keeps the SQLite figures and the PostgreSQL round trips in the committed baseline and leaves the other PostgreSQL ones (pg.…) out", () => {
    expect(isBaselineFigure("ledger.on@10k.ratio")).toBe(true);
    expect(isBaselineFigure("recovery.on@100k.peakRssMb")).toBe(true);
    expect(isBaselineFigure("pg.ledger.on@10k.ratio")).toBe(false);
    expect(isBaselineFigure("pg.ledger.on.roundTrips")).toBe(true);
    expect(isBaselineFigure("pg.recovery.3x@10k.cpuMsPerOutcome")).toBe(true);
    expect(isBaselineFigure("pg.recovery.scaling3of1@3k.ratio")).toBe(false);
  });
});

describe("recoveryCpuBreakdown: where the recovery's API CPU went", () => {
  it("splits the fixed overhead (quiet CPU × wall) and idle passes from the per-outcome work, and counts what was done twice", () => {
    const run = recovery(3, 2000);
    run.perInstance = run.perInstance.map((i, n) => ({
      ...i,
      // 1 ms of CPU per second with nothing running, over 2 s: 2 ms each
      quietCpuUsPerS: 1000,
      idlePasses: 1,
      idlePassCpuUs: 4000,
      adapterLookups: n === 0 ? 1001 : 1000,
      statements: {
        roundTrips: 3300,
        statements: { begin: 100, effectById: n },
        rows: { releaseLease: 2 },
        failed: (n === 2 ? { "40P01": 1 } : {}) as Record<string, number>,
      },
      contextSwitches: { voluntary: 4000, involuntary: 0 },
    }));
    const b = recoveryCpuBreakdown(run);
    expect(b.cpuMs).toBeCloseTo(600, 6);
    expect(b.quietMs).toBeCloseTo(6, 6);
    expect(b.idlePasses).toBe(3);
    expect(b.idlePassMs).toBeCloseTo(12, 6);
    expect(b.workMsPerOutcome).toBeCloseTo((600 - 6 - 12) / 3000, 9);
    expect(b.warmMsPerOutcome).toBeCloseTo(0.2, 9);
    expect(b.duplicateLookups).toBe(1);
    expect(b.leasesLost).toBe(0 + 1 + 2);
    expect(b.leasesGivenBack).toBe(6);
    expect(b.roundTripsPerOutcome).toBeCloseTo(3.3, 9);
    expect(b.transactionsPerOutcome).toBeCloseTo(0.1, 9);
    expect(b.failedStatements).toEqual({ "40P01": 1 });
    expect(b.wakeupsPerOutcome).toBeCloseTo(4, 9);
  });

  it("is printed in the recovery row's details", () => {
    const { rows } = pgRecoveryRows([recovery(1, 1000), recovery(3, 500)], 2);
    expect(rows[1]!.other).toMatch(/fixed 0 ms .* work 0\.200 ms\/outcome .*duplicate lookups 0, leases lost 0, given back 0/);
  });
});

describe("cpuMsPerOutcomeWithin: one instance's CPU over its first outcomes", () => {
  it("reads the first timeline sample at or past that many outcomes, and is undefined when the instance never got there", () => {
    const [one] = recovery(1, 1000).perInstance;
    const instance = {
      ...one!,
      timeline: [
        { ms: 250, cpuUs: 300_000, lookups: 100 },
        { ms: 500, cpuUs: 500_000, lookups: 250 },
        { ms: 750, cpuUs: 600_000, lookups: 400 },
      ],
    };
    expect(cpuMsPerOutcomeWithin(instance, 200)).toBeCloseTo(2, 9);
    expect(cpuMsPerOutcomeWithin(instance, 400)).toBeCloseTo(1.5, 9);
    expect(cpuMsPerOutcomeWithin(instance, 401)).toBeUndefined();
  });
});

describe("statementKind: the recovery instance's statements told apart", () => {
  it("names the lease, the give-back, the outcome and the due page by their SQL", () => {
    expect(statementKind("BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE")).toBe("begin");
    expect(statementKind('select "id" from "external_tool_effects" where x order by "id" limit $9 for update skip locked')).toBe("duePage");
    expect(
      statementKind(
        'update "external_tool_effects" set "version" = "external_tool_effects"."version" + 1, "lease_owner" = $1, "lease_expires_at_ms" = $2, "lookup_count" = "external_tool_effects"."lookup_count" + 1 where ("external_tool_effects"."id" in ($3, $4))',
      ),
    ).toBe("leaseBatch");
    expect(
      statementKind(
        'update "external_tool_effects" set "lease_owner" = $1, "lease_expires_at_ms" = $2, "lookup_count" = CASE WHEN "external_tool_effects"."lookup_count" > 0 THEN 1 ELSE 0 END where x',
      ),
    ).toBe("releaseLease");
    expect(statementKind('update "external_tool_effects" set "status" = $1, "lease_owner" = $2 where x')).toBe("commitOutcome");
    expect(statementKind('select "id" from "external_tool_effects" where "external_tool_effects"."id" = $1 limit $2')).toBe("effectById");
    expect(
      statementKind('WITH upd AS (\n  UPDATE "external_tool_effects"\n  SET "status" = $8 WHERE x RETURNING "id"), rec AS (x) SELECT 1'),
    ).toBe("commitOutcome");
    expect(statementKind('UPDATE "external_tool_effects" AS e\n  SET "lease_owner" = NULL FROM unnest($1::text[], $2::text[])')).toBe(
      "releaseLease",
    );
    expect(statementKind("SELECT 1")).toBe("other");
  });
});
