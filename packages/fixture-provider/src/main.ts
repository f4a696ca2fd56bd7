#!/usr/bin/env node
/**
 * Process entry of the fixture provider. `tsx src/main.ts --db <file> [flags]`; see `--help`.
 * HTTP mode prints exactly one JSON line to stdout once listening:
 * `{"event":"ready","url":"http://127.0.0.1:PORT/mcp","controlUrl":"http://127.0.0.1:PORT/control","pid":N}`.
 * Logs (pino, JSON) go to stderr. SIGTERM / SIGINT close cleanly (exit 0). `--exit-after-commit`
 * SIGKILLs the process right after a commit.
 */
import { pino } from "pino";
import { parseFixtureCli } from "./cli-options.js";
import { startFixtureProvider } from "./fixture-http-server.js";
import { startFixtureProviderStdio } from "./fixture-stdio-server.js";

async function main(): Promise<void> {
  const options = parseFixtureCli(process.argv);
  const logger = pino({ level: options.logLevel, name: "fixture-provider" }, pino.destination({ dest: 2, sync: true }));
  const common = {
    dbFile: options.db,
    fenceOnLookupMiss: options.fenceOnLookupMiss,
    advertiseIdempotency: options.advertiseIdempotency,
    ...(options.taskSupport ? { taskSupport: options.taskSupport } : {}),
    ...(options.keyArgument ? { keyPlacement: { in: "argument" as const, name: options.keyArgument } } : {}),
    ...(options.keyMeta ? { keyPlacement: { in: "meta" as const, name: options.keyMeta } } : {}),
    faults: {
      delayBeforeCommitMs: options.delayBeforeCommitMs,
      holdBeforeCommit: options.holdBeforeCommit,
      holdResponseAfterCommit: options.holdResponseAfterCommit,
      exitAfterCommit: options.exitAfterCommit,
      failBeforeCommit: options.failBeforeCommit,
    },
    exitAfterCommitMode: "kill-process" as const,
    logger,
  };

  let close: () => Promise<void>;
  if (options.stdio) {
    const handle = await startFixtureProviderStdio(common);
    close = handle.close;
    process.stdin.once("end", () => void shutdown("stdin closed"));
    logger.info({ db: options.db }, "fixture provider serving MCP over stdio");
  } else {
    const handle = await startFixtureProvider({ ...common, port: options.port, host: options.host });
    close = handle.close;
    process.stdout.write(`${JSON.stringify({ event: "ready", url: handle.url, controlUrl: handle.controlUrl, pid: process.pid })}\n`);
  }

  let stopping = false;
  async function shutdown(reason: string): Promise<void> {
    if (stopping) return;
    stopping = true;
    logger.info({ reason }, "shutting down");
    await close();
    process.exit(0);
  }
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
  process.once("SIGINT", () => void shutdown("SIGINT"));
}

main().catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`fixture-provider: ${message.split("\n")[0]}\n`);
  process.exit(1);
});
