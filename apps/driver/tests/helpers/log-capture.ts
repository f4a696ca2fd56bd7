import { Writable } from "node:stream";
import type { Logger } from "pino";
import { createDriverLogger } from "../../src/driver-runner.js";

/** A JSON log line as written by the Driver's logger. */
type LogLine = Record<string, unknown>;

/**
 * A pino logger (the Driver's own factory) whose JSON lines are kept in `lines` for assertions.
 * `waitFor(match)` resolves with the first line (already written or still to come) that `match`
 * accepts: a test waits for the Driver to have done something by its log event, not by a sleep.
 */
export function captureLogger(): { logger: Logger; lines: LogLine[]; waitFor: (match: (line: LogLine) => boolean) => Promise<LogLine> } {
  const lines: LogLine[] = [];
  const waiters = new Set<{ match: (line: LogLine) => boolean; resolve: (line: LogLine) => void }>();
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const text of chunk.toString("utf8").split("\n")) {
        if (!text.trim()) continue;
        const line = JSON.parse(text) as LogLine;
        lines.push(line);
        for (const waiter of [...waiters])
          if (waiter.match(line)) {
            waiters.delete(waiter);
            waiter.resolve(line);
          }
      }
      done();
    },
  });
  const waitFor = (match: (line: LogLine) => boolean): Promise<LogLine> => {
    const seen = lines.find(match);
    return seen ? Promise.resolve(seen) : new Promise((resolve) => waiters.add({ match, resolve }));
  };
  return { logger: createDriverLogger("debug", stream), lines, waitFor };
}
