import { describe, expect, it } from "vitest";
import { compareWithBaseline, describeComparison, mergeBaseline, type BenchFigure } from "../bench/baseline-check.js";

const fig = (key: string, value: number, unit: BenchFigure["unit"] = "x"): BenchFigure => ({ key, label: key, value, unit });
const byKey = (figs: BenchFigure[]) => Object.fromEntries(figs.map((f) => [f.key, f]));

describe("bench regression gate: compareWithBaseline (pure, over numbers)", () => {
  it("flags only a figure more than 20% above its baseline", () => {
    const baseline = byKey([fig("a", 2), fig("b", 2), fig("c", 2)]);
    const out = compareWithBaseline([fig("a", 2.4), fig("b", 2.41), fig("c", 1)], baseline);
    expect(out.map((c) => [c.key, c.regressed])).toEqual([
      ["a", false],
      ["b", true],
      ["c", false],
    ]);
    expect(out[1]!.change).toBeCloseTo(0.205, 3);
  });

  it("skips keys only one side has (a run of some scenarios checks just those)", () => {
    const out = compareWithBaseline([fig("a", 9), fig("new", 1)], byKey([fig("a", 1), fig("gone", 1)]));
    expect(out.map((c) => c.key)).toEqual(["a"]);
  });

  it("uses the baseline's magnitude for a figure at or below zero (p95 minus bound in ms)", () => {
    const base = byKey([fig("neg", -100, "ms"), fig("zero", 0, "ms")]);
    const out = compareWithBaseline([fig("neg", -75, "ms"), fig("zero", 1, "ms")], base);
    expect(out.find((c) => c.key === "neg")!.regressed).toBe(true); // -75 > -100 + 0.2 × 100
    expect(out.find((c) => c.key === "zero")!.regressed).toBe(true);
    expect(compareWithBaseline([fig("neg", -85, "ms")], base)[0]!.regressed).toBe(false);
  });

  it("gates a count (statements, WAL pages per lifecycle) by half a unit, whatever the tolerance", () => {
    const base = byKey([fig("pages", 10, "count"), fig("statements", 8, "count")]);
    const out = compareWithBaseline([fig("pages", 10.4, "count"), fig("statements", 9, "count")], base, 0.5);
    expect(out.map((c) => [c.key, c.regressed])).toEqual([
      ["pages", false],
      ["statements", true],
    ]);
    expect(describeComparison(out[1]!, 0.5)).toBe("bench.regression: statements: 9.00 vs baseline 8.00 (+13%, limit +0.5)");
  });

  it("honours a custom tolerance and refuses a negative one", () => {
    expect(compareWithBaseline([fig("a", 1.4)], byKey([fig("a", 1)]), 0.5)[0]!.regressed).toBe(false);
    expect(() => compareWithBaseline([], {}, -0.1)).toThrow(RangeError);
  });

  it("prints one readable line per figure", () => {
    const [c] = compareWithBaseline(
      [{ key: "r", label: "recovery 10k on, ratio to the lookup bound", value: 4.2, unit: "x" }],
      byKey([fig("r", 3.3)]),
    );
    expect(describeComparison(c!)).toBe(
      "bench.regression: recovery 10k on, ratio to the lookup bound: 4.20× vs baseline 3.30× (+27%, limit +20%)",
    );
  });
});

describe("bench regression gate: mergeBaseline", () => {
  const meta = { measuredAt: "2026-11-30T00:00:00.000Z", machine: "test", quick: false };
  it("replaces and adds figures by key and keeps the others", () => {
    const prev = mergeBaseline(undefined, [fig("a", 1), fig("b", 2)], meta);
    const next = mergeBaseline(prev, [fig("b", 3), fig("c", 4)], meta);
    expect(Object.fromEntries(Object.entries(next.figures).map(([k, f]) => [k, f.value]))).toEqual({ a: 1, b: 3, c: 4 });
  });
  it("never merges a QUICK run into a full baseline", () => {
    const prev = mergeBaseline(undefined, [fig("a", 1)], meta);
    const next = mergeBaseline(prev, [fig("b", 2)], { ...meta, quick: true });
    expect(Object.keys(next.figures)).toEqual(["b"]);
    expect(next.quick).toBe(true);
  });
});
