// The bench's regression gate: the figures a run is judged by, the committed baseline file's shape, and the comparison with it.
import { z } from "zod";

/**
 * The bench's regression gate (`npm run bench -- --check`, docs/performance.md): the figures a run
 * is judged by, the committed baseline file's shape, and the comparison. Pure functions over
 * numbers; the bench's main reads and writes the file.
 *
 * Every figure is "lower is better" and already relative to something measured or derived in the
 * same run (a floor or a bound), so a baseline from another machine or another load stays
 * comparable; absolute times are never gated.
 */

/** Default tolerance: a figure more than 20% above its baseline is a regression. */
export const DEFAULT_TOLERANCE = 0.2;

/** How far (absolute) a `count` figure may exceed its baseline: half a statement or page per lifecycle. */
const COUNT_SLACK = 0.5;

/**
 * One gated figure of a run: a stable `key` (e.g. `ledger.on@10k.ratio`), a readable `label`, its
 * `value` and its `unit` (`x` for a ratio against a floor or bound, `ms` for a p95 minus the lookup
 * bound, `MB` for peak RSS, `count` for a deterministic count such as statements or WAL pages per lifecycle).
 * Lower is better for every one.
 */
const BenchFigureSchema = z.strictObject({
  key: z.string().min(1).max(100),
  label: z.string().min(1).max(200),
  value: z.number().finite(),
  unit: z.union([z.literal("x"), z.literal("ms"), z.literal("MB"), z.literal("count")]),
});
/** See {@link BenchFigureSchema}. */
export type BenchFigure = z.infer<typeof BenchFigureSchema>;

/**
 * The committed baseline (`apps/api/bench/baseline.json`, written by `--write-baseline`): when and
 * where it was measured (`measuredAt` ISO time, `machine` one line), whether it is a QUICK run
 * (QUICK figures are never compared with full ones), and the figures by key.
 */
export const BenchBaselineSchema = z.strictObject({
  measuredAt: z.string().max(100),
  machine: z.string().max(300),
  quick: z.boolean(),
  figures: z.record(z.string(), BenchFigureSchema),
});
/** See {@link BenchBaselineSchema}. */
export type BenchBaseline = z.infer<typeof BenchBaselineSchema>;

/** One compared figure: the baseline's and this run's value, the relative change (`+0.25` = 25% worse), and whether it regressed. */
export interface FigureComparison {
  key: string;
  label: string;
  unit: BenchFigure["unit"];
  baseline: number;
  current: number;
  change: number;
  regressed: boolean;
}

/**
 * Compares this run's `current` figures with `baseline`, key by key (a key only one side has is
 * skipped: a run of some scenarios, `--only`, checks just those). A figure regresses when it exceeds
 * its baseline by more than `tolerance` (a fraction, default {@link DEFAULT_TOLERANCE}) of the
 * baseline's magnitude: `current > baseline + tolerance × |baseline|` (the magnitude keeps the rule
 * sensible for a `ms` figure at or below zero). A `count` figure is not load-dependent, so the tolerance does not
 * apply: it regresses when it exceeds its baseline by more than {@link COUNT_SLACK} (the odd B-tree page split
 * in a mean of WAL pages). Returns the comparisons in `current`'s order.
 * @throws RangeError when `tolerance` is negative or not finite.
 */
export function compareWithBaseline(
  current: readonly BenchFigure[],
  baseline: Readonly<Record<string, BenchFigure>>,
  tolerance = DEFAULT_TOLERANCE,
): FigureComparison[] {
  if (!Number.isFinite(tolerance) || tolerance < 0) throw new RangeError(`tolerance must be a finite fraction ≥ 0 (got ${tolerance})`);
  const out: FigureComparison[] = [];
  for (const fig of current) {
    const base = baseline[fig.key];
    if (!base) continue;
    const magnitude = Math.abs(base.value);
    const change = magnitude === 0 ? (fig.value > 0 ? Number.POSITIVE_INFINITY : 0) : (fig.value - base.value) / magnitude;
    out.push({
      key: fig.key,
      label: fig.label,
      unit: fig.unit,
      baseline: base.value,
      current: fig.value,
      change,
      regressed: fig.value > base.value + (fig.unit === "count" ? COUNT_SLACK : tolerance * magnitude),
    });
  }
  return out;
}

/** A figure with its unit, e.g. `3.52×`, `407 ms`, `189 MB`, `8.00` (a count). */
function formatFigure(value: number, unit: BenchFigure["unit"]): string {
  if (unit === "x") return `${value.toFixed(2)}×`;
  return unit === "count" ? value.toFixed(2) : `${value.toFixed(0)} ${unit}`;
}

/**
 * One readable line per comparison: `bench.regression: <label>: <current> vs baseline <baseline>
 * (+N%, limit +M%)` (a count: `limit +0.5`) for a regression, `bench.ok: ...` otherwise.
 */
export function describeComparison(c: FigureComparison, tolerance = DEFAULT_TOLERANCE): string {
  const pct = Number.isFinite(c.change) ? `${c.change >= 0 ? "+" : ""}${(c.change * 100).toFixed(0)}%` : "+∞%";
  return `${c.regressed ? "bench.regression" : "bench.ok"}: ${c.label}: ${formatFigure(c.current, c.unit)} vs baseline ${formatFigure(c.baseline, c.unit)} (${pct}, limit ${c.unit === "count" ? `+${COUNT_SLACK}` : `+${(tolerance * 100).toFixed(0)}%`})`;
}

/**
 * The baseline after `--write-baseline`: `previous`'s figures (if any) with this run's `current`
 * ones replacing or adding theirs by key, so a run of some scenarios (`--only`) updates just those.
 * A QUICK run never merges into a full baseline (nor the reverse): it starts a new one.
 */
export function mergeBaseline(
  previous: BenchBaseline | undefined,
  current: readonly BenchFigure[],
  meta: { measuredAt: string; machine: string; quick: boolean },
): BenchBaseline {
  const figures: Record<string, BenchFigure> = previous && previous.quick === meta.quick ? { ...previous.figures } : {};
  for (const fig of current) figures[fig.key] = fig;
  return { ...meta, figures };
}
