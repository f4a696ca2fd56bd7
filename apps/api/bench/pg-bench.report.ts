// Turns the PostgreSQL scenarios' results into bench table rows and gated figures, and parses the `--store` option.
import { availableParallelism } from "node:os";
import type { BenchFigure } from "./baseline-check.js";
import type { LatencyStats } from "./ledger-cost.scenario.js";
import type { PgLedgerCostResult } from "./pg-ledger-cost.scenario.js";
import type { PgRecoveryResult } from "./pg-recovery.scenario.js";

/**
 * The bench's PostgreSQL rows (docs/performance.md): the `--store` option and the pure functions
 * that turn the PostgreSQL scenarios' results into table rows and gated figures (unit-tested in
 * `tests/bench-pg-report.test.ts`; no timing is asserted there).
 */

/** Which stores' rows `npm run bench` measures (`--store`; default `all`). */
export const BENCH_STORES = ["sqlite", "postgres", "all"] as const;
/** See {@link BENCH_STORES}. */
export type BenchStoreChoice = (typeof BENCH_STORES)[number];

/**
 * Parses `--store <sqlite|postgres|all>` (case-sensitive, surrounding blanks ignored).
 * @throws RangeError `unknown store X; one of sqlite, postgres, all` for anything else.
 */
export function parseStoreChoice(value: string): BenchStoreChoice {
  const v = value.trim();
  if ((BENCH_STORES as readonly string[]).includes(v)) return v as BenchStoreChoice;
  throw new RangeError(`unknown store ${JSON.stringify(value)}; one of ${BENCH_STORES.join(", ")}`);
}

/**
 * Whether a figure goes into the committed baseline (`--write-baseline`): the SQLite figures, the
 * PostgreSQL round trips (`pg.….roundTrips`: a count, stable from run to run) and the recovery's API CPU per
 * outcome (`pg.….cpuMsPerOutcome`: CPU time, which a busy machine stretches far less than wall time), and the history
 * rows' CPU ratios (`pg.history.….cpuRatio`: CPU per operation on the filled database over the empty one's) and full
 * reads of history tables in their plans (`pg.history.plans@….fullScans`, a count). The other PostgreSQL figures
 * (keys `pg.…`) moved by 2× and more between runs on the shared 2-core machine (docs/performance.md,
 * PostgreSQL rows), too much for a 20% gate; `--check` skips any key the baseline lacks, so they are printed but never gated.
 */
export function isBaselineFigure(key: string): boolean {
  return (
    !key.startsWith("pg.") ||
    key.endsWith(".roundTrips") ||
    key.endsWith(".cpuMsPerOutcome") ||
    key.endsWith(".cpuRatio") ||
    key.endsWith(".fullScans")
  );
}

/** Targets for PostgreSQL: ledger ≤ 2× a bare `pg` transaction floor; recovery with 3 API instances ≤ 0.45× the time of 1; round trips per lifecycle and API CPU per outcome (ms). */
export const PG_TARGETS = { ledgerRatio: 1.5, scalingRatio: 0.45, roundTrips: 14, cpuMsPerOutcome: 0.3, cpuSpreadRatio: 1.15 } as const;
/** The floor's round trips per lifecycle: four transactions of `BEGIN`, one statement, `COMMIT`. */
const PG_FLOOR_ROUND_TRIPS = 12;

/** One printed row of the bench table: what, flag, measured figure, its floor or bound, ratio, other figures, target, met. */
export interface BenchRow {
  scenario: string;
  flag: "on" | "off";
  measured: string;
  floorOrBound: string;
  ratio: string;
  other: string;
  target: string;
  met: "yes" | "no" | "n/a";
}

/** Rows and gated figures of one part of the table. */
export interface RowsAndFigures {
  rows: BenchRow[];
  figures: BenchFigure[];
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
/** `10000` → `10k`, `500` → `500`. */
export const fmtK = (n: number): string => (n >= 1000 ? `${n / 1000}k` : String(n));
const fmtUs = (s: LatencyStats) => `${s.medianUs.toFixed(0)} µs (rounds ${s.roundMediansUs.join("/")})`;
const fmtLoad = (l: { before: number | null; after: number | null }) =>
  l.before === null || l.after === null ? "load n/a" : `load ${l.before.toFixed(2)}→${l.after.toFixed(2)}`;

/**
 * The ledger rows on PostgreSQL: per flag and table size, the lifecycle's median against the bare
 * `pg` floor's (ratio = ledger / floor), with figures `pg.ledger.<flag>@<size>.ratio` (lower is better).
 */
export function pgLedgerRows(result: PgLedgerCostResult): RowsAndFigures {
  const rows: BenchRow[] = [];
  const figures: BenchFigure[] = [];
  for (const flag of ["on", "off"] as const) {
    for (const p of result.points) {
      const s = flag === "on" ? p.ledgerOn : p.ledgerOff;
      const ratio = s.medianUs / p.floor.medianUs;
      figures.push({
        key: `pg.ledger.${flag}@${fmtK(p.existingEffects)}.ratio`,
        label: `PostgreSQL ledger ${flag} @ ${fmtK(p.existingEffects)} effects, ratio to the bare pg floor`,
        value: ratio,
        unit: "x",
      });
      rows.push({
        scenario: `1 PostgreSQL ledger, µs/lifecycle @ ${fmtK(p.existingEffects)} effects`,
        flag,
        measured: fmtUs(s),
        floorOrBound: `pg floor ${fmtUs(p.floor)}`,
        ratio: `${ratio.toFixed(2)}×`,
        other: `MAD ${s.madUs.toFixed(0)} µs, p99 ${s.p99Us.toFixed(0)} µs, n=${s.samples}, ${fmtLoad(result.loadAverage)}`,
        target: `≤ ${PG_TARGETS.ledgerRatio}×`,
        met: ratio <= PG_TARGETS.ledgerRatio ? "yes" : "no",
      });
    }
  }
  const t = result.roundTrips;
  figures.push({ key: "pg.ledger.on.roundTrips", label: "PostgreSQL ledger on, round trips per lifecycle", value: t.lifecycle, unit: "x" });
  rows.push({
    scenario: "1 PostgreSQL ledger, round trips per lifecycle (delivery excluded)",
    flag: "on",
    measured: `${t.lifecycle}`,
    floorOrBound: `pg floor ${PG_FLOOR_ROUND_TRIPS}`,
    ratio: `${(t.lifecycle / PG_FLOOR_ROUND_TRIPS).toFixed(2)}×`,
    other: `enqueue ${t.enqueue}, claim ${t.claim}, complete ${t.complete}, terminal ${t.terminal} (delivery ${t.deliver})`,
    target: `≤ ${PG_TARGETS.roundTrips}`,
    met: t.lifecycle <= PG_TARGETS.roundTrips ? "yes" : "no",
  });
  return { rows, figures };
}

/**
 * The scaling of recovery with API instances: `ratio` = median wall time with `instances` /
 * median wall time with one (lower is better; 1/instances would be perfect), and the ratio of each
 * round (the i-th run with `instances` against the i-th with one; rounds alternate 1, N, 1, N).
 * @throws RangeError when either side has no run, or a wall time is not positive.
 */
export function scalingRatio(oneWallMs: readonly number[], manyWallMs: readonly number[]): { ratio: number; perRound: number[] } {
  if (oneWallMs.length === 0 || manyWallMs.length === 0) throw new RangeError("scaling ratio: a side has no run");
  if ([...oneWallMs, ...manyWallMs].some((w) => !(w > 0))) throw new RangeError("scaling ratio: wall times must be positive");
  const rounds = Math.min(oneWallMs.length, manyWallMs.length);
  return {
    ratio: median(manyWallMs) / median(oneWallMs),
    perRound: Array.from({ length: rounds }, (_, i) => manyWallMs[i]! / oneWallMs[i]!),
  };
}

/** Whether every run resolved every effect and recorded exactly one lookup per effect. */
const completeRuns = (rs: readonly PgRecoveryResult[]): boolean =>
  rs.every((r) => r.resolved === r.effects && r.lookupsRecorded === r.effects);

/** The `other` column of one PostgreSQL recovery row: API CPU (ms/outcome), lookups per instance, superseded by reason, resolved, load. */
function pgRecoveryOther(rs: readonly PgRecoveryResult[], cpuMs: number, cpus: number): string {
  return `API CPU ${cpuMs.toFixed(3)} ms/outcome (target ≤ ${PG_TARGETS.cpuMsPerOutcome}, all instances summed; ${cpus} cores), lookups per instance ${rs.map((r) => r.perInstance.map((i) => i.lookedUp).join("+")).join(" / ")}, superseded ${rs
    .map(
      (r) =>
        r.superseded +
        (r.superseded > 0
          ? ` (${Object.entries(r.supersededReasons)
              .map(([k, v]) => `${k} ${v}`)
              .join(", ")})`
          : ""),
    )
    .join("/")}, resolved ${rs.map((r) => r.resolved).join("/")}, ${rs.map((r) => fmtLoad(r.loadAverage)).join(", ")}`;
}

/** The scaling rows: per instance count above 1, time(N) / time(1) against the ideal 1/N (target at 3 instances), figure `pg.recovery.scaling<n>of1@<size>.ratio`. */
function pgScalingRows(runs: readonly PgRecoveryResult[], counts: readonly number[], out: RowsAndFigures): void {
  const one = runs.filter((r) => r.instances === 1);
  for (const n of counts.filter((c) => c > 1)) {
    const many = runs.filter((r) => r.instances === n);
    if (one.length === 0) continue;
    const s = scalingRatio(
      one.map((r) => r.wallMs),
      many.map((r) => r.wallMs),
    );
    const effects = one[0]!.effects;
    out.figures.push({
      key: `pg.recovery.scaling${n}of1@${fmtK(effects)}.ratio`,
      label: `PostgreSQL recovery ${fmtK(effects)}, time with ${n} API instances over time with 1`,
      value: s.ratio,
      unit: "x",
    });
    out.rows.push({
      scenario: `2 PostgreSQL recovery scaling, ${fmtK(effects)} unknown: time(${n} instances) / time(1)`,
      flag: "on",
      measured: `${median(many.map((r) => r.wallMs)).toFixed(0)} ms / ${median(one.map((r) => r.wallMs)).toFixed(0)} ms`,
      floorOrBound: `ideal ${(1 / n).toFixed(2)}×`,
      ratio: `${s.ratio.toFixed(2)}×`,
      other: `per round ${s.perRound.map((r) => `${r.toFixed(2)}×`).join("/")}`,
      target: n === 3 ? `≤ ${PG_TARGETS.scalingRatio}×` : "n/a",
      met: n !== 3 ? "n/a" : s.ratio <= PG_TARGETS.scalingRatio && completeRuns(one) && completeRuns(many) ? "yes" : "no",
    });
  }
}

/**
 * Where one PostgreSQL recovery run's API CPU went (all instances summed; see `PgRecoveryInstanceResult`):
 * - `cpuMs`: the total (ms); `quietMs`: each instance's CPU with no pass running (runtime, pool, timers: µs per s,
 *   measured after the recovery) × its wall time, the fixed overhead of running an instance at all;
 * - `idlePasses` / `idlePassMs`: passes that looked nothing up (their due page was leased elsewhere) and their CPU;
 * - `workMsPerOutcome`: the rest over the effects (ms): the work that should split between instances;
 *   `warmMsPerOutcome`: the same over the second half of each instance's wall time only (JIT warm-up left out);
 * - `duplicateLookups`: adapter calls beyond one per effect (0 when nothing was looked up twice);
 * - `leasesLost`: effects read again because their lease's compare-and-set was lost (leased elsewhere meanwhile);
 *   `leasesGivenBack`: leases taken and given back unused (a pass that ran out of time);
 * - `roundTripsPerOutcome`, `transactionsPerOutcome`, `failedStatements` (by SQLSTATE: deadlocks, unique retries),
 *   `wakeupsPerOutcome` (voluntary context switches of the instance processes per effect).
 */
export interface RecoveryCpuBreakdown {
  cpuMs: number;
  quietMs: number;
  idlePasses: number;
  idlePassMs: number;
  workMsPerOutcome: number;
  warmMsPerOutcome: number;
  duplicateLookups: number;
  leasesLost: number;
  leasesGivenBack: number;
  roundTripsPerOutcome: number;
  transactionsPerOutcome: number;
  failedStatements: Record<string, number>;
  wakeupsPerOutcome: number;
}

/** The {@link RecoveryCpuBreakdown} of one run, from its instances' reports. */
export function recoveryCpuBreakdown(run: PgRecoveryResult): RecoveryCpuBreakdown {
  const sum = (f: (i: PgRecoveryResult["perInstance"][number]) => number) => run.perInstance.reduce((s, i) => s + f(i), 0);
  const cpuMs = sum((i) => i.cpuUs) / 1000;
  const quietMs = sum((i) => (i.quietCpuUsPerS * i.wallMs) / 1000) / 1000;
  const idlePassMs = sum((i) => i.idlePassCpuUs) / 1000;
  const warmLookups = sum((i) => i.warmLookups);
  const failedStatements: Record<string, number> = {};
  for (const i of run.perInstance)
    for (const [code, n] of Object.entries(i.statements.failed)) failedStatements[code] = (failedStatements[code] ?? 0) + n;
  return {
    cpuMs,
    quietMs,
    idlePasses: sum((i) => i.idlePasses),
    idlePassMs,
    workMsPerOutcome: (cpuMs - quietMs - idlePassMs) / run.effects,
    warmMsPerOutcome: warmLookups > 0 ? sum((i) => i.warmCpuUs) / 1000 / warmLookups : Number.NaN,
    duplicateLookups: sum((i) => i.adapterLookups) - run.effects,
    leasesLost: sum((i) => i.statements.statements.effectById ?? 0),
    leasesGivenBack: sum((i) => i.statements.rows.releaseLease ?? 0),
    roundTripsPerOutcome: sum((i) => i.statements.roundTrips) / run.effects,
    transactionsPerOutcome: sum((i) => i.statements.statements.begin ?? 0) / run.effects,
    failedStatements,
    wakeupsPerOutcome: sum((i) => i.contextSwitches.voluntary) / run.effects,
  };
}

/**
 * One instance's CPU per outcome (ms) over its first `outcomes` adapter calls, from its timeline (the first
 * sample at or past that many); undefined when it never got that far. The CPU of a process's first outcomes
 * carries its one-time warm-up (JIT, caches, prepared statements), so instances are compared at the same
 * number of outcomes per process: N instances each doing 1/N of the work against one instance's first 1/N.
 */
export function cpuMsPerOutcomeWithin(instance: PgRecoveryResult["perInstance"][number], outcomes: number): number | undefined {
  const at = instance.timeline.find((p) => p.lookups >= outcomes && p.lookups > 0);
  return at === undefined ? undefined : at.cpuUs / 1000 / at.lookups;
}

/** One run's {@link RecoveryCpuBreakdown} as the recovery row prints it. */
function fmtCpuBreakdown(b: RecoveryCpuBreakdown): string {
  const failed = Object.entries(b.failedStatements);
  return (
    `CPU ${b.cpuMs.toFixed(0)} ms = fixed ${b.quietMs.toFixed(0)} ms (${((100 * b.quietMs) / b.cpuMs).toFixed(1)}%) + ` +
    `${b.idlePasses} idle passes ${b.idlePassMs.toFixed(0)} ms + work ${b.workMsPerOutcome.toFixed(3)} ms/outcome (warm ${b.warmMsPerOutcome.toFixed(3)}); ` +
    `duplicate lookups ${b.duplicateLookups}, leases lost ${b.leasesLost}, given back ${b.leasesGivenBack}, ` +
    `${b.roundTripsPerOutcome.toFixed(2)} round trips and ${b.transactionsPerOutcome.toFixed(3)} transactions per outcome, ` +
    `failed statements ${failed.length === 0 ? "none" : failed.map(([k, v]) => `${k} ${v}`).join(", ")}, ` +
    `${b.wakeupsPerOutcome.toFixed(1)} wakeups per outcome`
  );
}

/**
 * The recovery rows on PostgreSQL: one row per instance count (median wall time against its lookup
 * bound, with the range, the superseded count and the load) and one for the scaling ratio
 * time(N)/time(1) against the target, with figures `pg.recovery.<n>x@<size>.ratio` (wall / bound) and
 * `pg.recovery.scaling<n>of1@<size>.ratio`. A row is `met` only when every run resolved every effect
 * and recorded exactly one lookup per effect.
 */
export function pgRecoveryRows(runs: readonly PgRecoveryResult[], cpus = availableParallelism()): RowsAndFigures {
  const rows: BenchRow[] = [];
  const figures: BenchFigure[] = [];
  const counts = [...new Set(runs.map((r) => r.instances))].sort((a, b) => a - b);
  // API CPU per outcome: every instance's CPU time summed, over the effects (ms); the median of the runs
  const cpuMsOf = (rs: readonly PgRecoveryResult[]) =>
    median(rs.map((r) => r.perInstance.reduce((sum, i) => sum + i.cpuUs, 0) / 1000 / r.effects));
  const oneRuns = runs.filter((r) => r.instances === 1);
  const oneCpuMs = oneRuns.length > 0 ? cpuMsOf(oneRuns) : undefined;
  for (const n of counts) {
    const rs = runs.filter((r) => r.instances === n);
    const first = rs[0]!;
    const walls = rs.map((r) => r.wallMs);
    const ratio = median(walls) / first.boundMs;
    figures.push({
      key: `pg.recovery.${n}x@${fmtK(first.effects)}.ratio`,
      label: `PostgreSQL recovery ${fmtK(first.effects)} with ${n} API instance(s), ratio to the lookup bound`,
      value: ratio,
      unit: "x",
    });
    const cpuMs = cpuMsOf(rs);
    // one instance's CPU over its first 1/n of the effects: the same work per process as each of the n instances
    const sameShare =
      n === 1
        ? []
        : oneRuns.flatMap((r) => r.perInstance.map((i) => cpuMsPerOutcomeWithin(i, first.effects / n))).filter((x) => x !== undefined);
    const sameShareText =
      sameShare.length === 0
        ? ""
        : `; 1 instance over its first ${Math.round(first.effects / n)} outcomes ${median(sameShare).toFixed(3)} ms/outcome (${(cpuMs / median(sameShare)).toFixed(2)}× at the same work per process)`;
    // one instance: CPU per outcome against the bound; several: their summed CPU against one instance's (nothing done twice)
    const cpuTarget =
      n === 1
        ? { text: `CPU ≤ ${PG_TARGETS.cpuMsPerOutcome} ms/outcome`, met: cpuMs <= PG_TARGETS.cpuMsPerOutcome }
        : oneCpuMs === undefined
          ? undefined
          : { text: `CPU ≤ ${PG_TARGETS.cpuSpreadRatio}× 1 instance's`, met: cpuMs <= PG_TARGETS.cpuSpreadRatio * oneCpuMs };
    figures.push({
      key: `pg.recovery.${n}x@${fmtK(first.effects)}.cpuMsPerOutcome`,
      label: `PostgreSQL recovery ${fmtK(first.effects)} with ${n} API instance(s), API CPU per outcome (all instances)`,
      value: cpuMs,
      unit: "ms",
    });
    rows.push({
      scenario: `2 PostgreSQL recovery, ${fmtK(first.effects)} unknown, ${n} API instance(s) × c=${first.concurrency}`,
      flag: "on",
      measured: `${median(walls).toFixed(0)} ms (${Math.min(...walls).toFixed(0)}–${Math.max(...walls).toFixed(0)}, n=${rs.length})`,
      floorOrBound: `bound ${first.boundMs.toFixed(0)} ms`,
      ratio: `${ratio.toFixed(2)}×`,
      other: `${pgRecoveryOther(rs, cpuMs, cpus)}; ${rs.map((r) => fmtCpuBreakdown(recoveryCpuBreakdown(r))).join(" / ")}${sameShareText}`,
      target: cpuTarget?.text ?? "n/a",
      met: cpuTarget === undefined ? "n/a" : cpuTarget.met && completeRuns(rs) ? "yes" : "no",
    });
  }
  pgScalingRows(runs, counts, { rows, figures });
  return { rows, figures };
}
