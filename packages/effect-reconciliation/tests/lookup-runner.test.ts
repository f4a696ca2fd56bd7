// The bounded adapter call: lookups started together share one timeout signal, and each is still bounded.
import { describe, expect, it } from "vitest";
import { runLookup } from "../src/host/lookup-runner.ts";
import { NOOP_LOGGER } from "../src/host/index.ts";
import { makeDeclaration, makeEffect } from "./reconcile-fixtures.ts";
import type { LookupRequest, ReconciliationAdapter } from "../src/index.ts";

describe("runLookup: one timeout signal per burst", () => {
  it("20 lookups started together: each one that hangs times out, each one that answers is answered, and no listener-leak warning is emitted", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on("warning", onWarning);
    try {
      const signals = new Set<AbortSignal>();
      const adapter = (hang: boolean): ReconciliationAdapter => ({
        declaration: makeDeclaration(),
        lookup: (_request, { signal }) => {
          signals.add(signal);
          return hang ? new Promise(() => undefined) : Promise.resolve({ ok: true });
        },
      });
      const effect = makeEffect();
      const request = { ...effect } as unknown as LookupRequest;
      const runs = Array.from({ length: 20 }, (_, i) => runLookup(adapter(i % 2 === 0), request, NOOP_LOGGER, 50, undefined));
      const results = await Promise.all(runs);
      expect(results.filter((r) => r.kind === "timed_out")).toHaveLength(10);
      expect(results.filter((r) => r.kind === "answered")).toHaveLength(10);
      expect(signals.size).toBeLessThan(20);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).not.toContain("MaxListenersExceededWarning");
    } finally {
      process.off("warning", onWarning);
    }
  });
});
