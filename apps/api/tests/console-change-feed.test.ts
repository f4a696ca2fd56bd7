import pino from "pino";
import { describe, expect, it } from "vitest";
import { EffectChangeFeed, MAX_UNKNOWN_SAMPLES } from "../src/modules/console/application/effect-change-feed.service.js";
import { createDoubleWorld, dispatchWrite, reconnectDriver, operatorNamed } from "./kit/index.js";

const HOUR = 3_600_000; // the feed's own timer never fires in these tests: they call check() themselves

describe("the console's change feed", () => {
  it("tells listeners only when the store's change marker moves, and samples the unknown count each time", async () => {
    let marker = "a";
    let unknown = 3;
    let now = 1_000;
    const feed = new EffectChangeFeed(
      { changeMarker: async () => marker, unknownTotal: async () => unknown, nowMs: () => now },
      pino({ level: "silent" }),
      HOUR,
    );
    const seen: string[] = [];
    const off = feed.subscribe((m) => seen.push(m));
    expect(await feed.unknownSeries()).toEqual([{ atMs: 1_000, count: 3 }]);
    await feed.check();
    expect(seen).toEqual([]);
    marker = "b";
    unknown = 2;
    now = 2_000;
    await feed.check();
    await feed.check();
    expect(seen).toEqual(["b"]);
    expect(await feed.unknownSeries()).toEqual([
      { atMs: 1_000, count: 3 },
      { atMs: 2_000, count: 2 },
    ]);
    off();
    marker = "c";
    await feed.check();
    expect(seen).toEqual(["b"]);
    feed.close();
    expect(feed.subscribe(() => seen.push("late"))).toBeTypeOf("function");
  });

  it("keeps at most MAX_UNKNOWN_SAMPLES samples and survives a failing store read", async () => {
    let n = 0;
    let fail = false;
    const feed = new EffectChangeFeed(
      {
        changeMarker: async () => {
          if (fail) throw new Error("database is locked");
          return String(n);
        },
        unknownTotal: async () => n,
        nowMs: () => n,
      },
      pino({ level: "silent" }),
      HOUR,
    );
    const off = feed.subscribe(() => undefined);
    for (n = 1; n <= MAX_UNKNOWN_SAMPLES + 20; n++) await feed.check();
    const series = await feed.unknownSeries();
    expect(series).toHaveLength(MAX_UNKNOWN_SAMPLES);
    expect(series.at(-1)).toEqual({ atMs: MAX_UNKNOWN_SAMPLES + 20, count: MAX_UNKNOWN_SAMPLES + 20 });
    fail = true;
    await expect(feed.check()).resolves.toBeUndefined(); // never rejects
    off();
    feed.close();
  });

  it("the operator service's change marker moves on an intent, a fence and a manual resolution", async () => {
    const fx = createDoubleWorld({ bind: false });
    try {
      const m0 = await fx.runtime.operator.changeMarker();
      const call = await dispatchWrite(fx);
      const m1 = await fx.runtime.operator.changeMarker();
      expect(m1).not.toBe(m0);
      const restarted = await reconnectDriver(fx.runtime, call.driver);
      await fx.runtime.commands.nextCommand(restarted.instance, restarted.connectionId, 0);
      expect((await fx.runtime.ledger.claim(restarted.instance, restarted.connectionId, call.commandId)).kind).toBe("unknown");
      const m2 = await fx.runtime.operator.changeMarker();
      expect(m2).not.toBe(m1);
      expect((await fx.runtime.operator.stats()).unknownTotal).toBe(1);
      await fx.runtime.operator.resolve(call.effectId, { outcome: "not_executed", reason: "checked" }, operatorNamed("alice"));
      expect(await fx.runtime.operator.changeMarker()).not.toBe(m2);
      expect((await fx.runtime.operator.stats()).unknownTotal).toBe(0);
    } finally {
      fx.close();
    }
  });
});
