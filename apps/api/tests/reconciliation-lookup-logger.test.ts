import pino from "pino";
import { describe, expect, it } from "vitest";
import { boundLogger } from "../src/modules/reconciliation/application/effect-reconciler.service.js";

/** A pino logger at debug level that keeps every line it writes, parsed. */
function capturing(): { logger: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: "debug" }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

describe("a lookup's logger", () => {
  it("adds the lookup's bindings to every line at its level, and a line's own field cannot replace a binding (an adapter cannot forge the effect, command or adapter)", () => {
    const { logger, lines } = capturing();
    const log = boundLogger(logger, { effectId: "e1", adapterId: "tracker", commandId: "c1" });
    log.debug({ step: 1 }, "one");
    log.info({ step: 2 }, "two");
    log.warn({ adapterId: "forged", commandId: "forged" }, "three");
    log.error({}, "four");
    expect(lines.map((l) => [l.level, l.msg, l.effectId, l.commandId, l.adapterId, l.step])).toEqual([
      [20, "one", "e1", "c1", "tracker", 1],
      [30, "two", "e1", "c1", "tracker", 2],
      [40, "three", "e1", "c1", "tracker", undefined],
      [50, "four", "e1", "c1", "tracker", undefined],
    ]);
  });

  it("writes nothing below the parent's level", () => {
    const { logger, lines } = capturing();
    logger.level = "warn";
    const log = boundLogger(logger, { effectId: "e1" });
    log.debug({}, "hidden");
    log.info({}, "hidden");
    log.warn({}, "shown");
    expect(lines.map((l) => l.msg)).toEqual(["shown"]);
  });
});
