// Serves the fixture provider as one MCP server over this process's stdin and stdout.
import type { KeyPlacement } from "@mosoo/contracts";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { pino, type Logger } from "pino";
import type { FixtureFaults } from "./fixture-faults.contract.js";
import { createFixtureMcpServer } from "./fixture-mcp-server.js";
import {
  openFixtureProviderService,
  type ExitAfterCommitMode,
  type FixtureProviderService,
  type FixtureTaskSupport,
} from "./fixture-provider.service.js";

/** Options of {@link startFixtureProviderStdio}. */
export interface StartFixtureProviderStdioOptions {
  /** SQLite file of the provider (created with its parent directory if missing). */
  dbFile: string;
  /** When true, a `getOperation` miss durably fences the key (default false). */
  fenceOnLookupMiss?: boolean;
  /** Where the write tools read the idempotency key (default `_meta["io.mosoo/idempotency-key"]`). */
  keyPlacement?: KeyPlacement;
  /** Advertise the zero-code idempotency convention in `tools/list` (default false). */
  advertiseIdempotency?: boolean;
  /** MCP task support of the write tools (`FixtureProviderServiceOptions.taskSupport`); default none. */
  taskSupport?: FixtureTaskSupport;
  /** Fault switches (fixed for the life of the process: stdio mode has no control API). */
  faults?: Partial<FixtureFaults>;
  /** What `exitAfterCommit` does; default `"kill-process"` (stdio mode is process mode). */
  exitAfterCommitMode?: ExitAfterCommitMode;
  /** pino logger; it must NOT write to stdout (the MCP stream). Default: silent. */
  logger?: Logger;
}

/** A fixture provider serving MCP over this process's stdin/stdout. */
export interface FixtureProviderStdioHandle {
  provider: FixtureProviderService;
  /** Closes the MCP server and the provider (database included). Idempotent. */
  close(): Promise<void>;
}

/**
 * Serves the fixture provider over stdio (`StdioServerTransport`): one MCP server on stdin/stdout.
 * Held responses (`holdResponseAfterCommit`) can only be released by `handle.provider.release()`.
 * @throws when the database cannot be opened or the faults are invalid.
 */
export async function startFixtureProviderStdio(options: StartFixtureProviderStdioOptions): Promise<FixtureProviderStdioHandle> {
  const provider = openFixtureProviderService(options.dbFile, {
    fenceOnLookupMiss: options.fenceOnLookupMiss ?? false,
    ...(options.keyPlacement ? { keyPlacement: options.keyPlacement } : {}),
    advertiseIdempotency: options.advertiseIdempotency ?? false,
    ...(options.taskSupport ? { taskSupport: options.taskSupport } : {}),
    faults: options.faults ?? {},
    exitAfterCommitMode: options.exitAfterCommitMode ?? "kill-process",
    logger: options.logger ?? pino({ level: "silent" }),
  });
  const server = createFixtureMcpServer(provider);
  await server.connect(new StdioServerTransport());
  let closing: Promise<void> | undefined;
  return {
    provider,
    close: () => {
      closing ??= (async () => {
        provider.close();
        await server.close();
      })();
      return closing;
    },
  };
}
