import { Writable } from "node:stream";
import type { Logger } from "pino";
import { createDriverLogger } from "../../src/driver-runner.js";

/** A pino logger (the Driver's own factory) whose JSON lines are kept in `lines` for assertions. */
export function captureLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createDriverLogger("debug", stream), lines };
}
