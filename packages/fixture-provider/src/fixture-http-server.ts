// Serves the fixture provider over stateless Streamable HTTP with its control API, on loopback only.
import type { KeyPlacement } from "@mosoo/contracts";
import type { Server } from "node:http";
import { createAdaptorServer } from "@hono/node-server";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { Hono } from "hono";
import { pino, type Logger } from "pino";
import { createControlRoutes } from "./control-routes.js";
import type { FixtureFaults } from "./fixture-faults.contract.js";
import { createFixtureMcpServer } from "./fixture-mcp-server.js";
import { loopbackHostValidation } from "./host-validation.js";
import {
  openFixtureProviderService,
  type ExitAfterCommitMode,
  type FixtureProviderService,
  type FixtureTaskSupport,
} from "./fixture-provider.service.js";
import type { FixtureStats } from "./fixture-stats.contract.js";

/** Options of {@link startFixtureProvider}. */
export interface StartFixtureProviderOptions {
  /** SQLite file of the provider (created with its parent directory if missing). */
  dbFile: string;
  /** TCP port; 0 (the default) picks a free ephemeral port. */
  port?: number;
  /** Interface to listen on; only the loopback `127.0.0.1` is supported (the default). */
  host?: "127.0.0.1";
  /** When true, a `getOperation` miss durably fences the key (default false). */
  fenceOnLookupMiss?: boolean;
  /** Where the write tools read the idempotency key (default `_meta["io.mosoo/idempotency-key"]`). */
  keyPlacement?: KeyPlacement;
  /** Advertise the zero-code idempotency convention in `tools/list` (default false). */
  advertiseIdempotency?: boolean;
  /** MCP task support of the write tools (`FixtureProviderServiceOptions.taskSupport`); default none. */
  taskSupport?: FixtureTaskSupport;
  /** The `pollInterval` (ms) every task suggests; default 100. */
  taskPollIntervalMs?: number;
  /** Initial fault switches; the others stay off. */
  faults?: Partial<FixtureFaults>;
  /** What `exitAfterCommit` does; default `"drop-response"` (never answer). `main.ts` uses `"kill-process"`. */
  exitAfterCommitMode?: ExitAfterCommitMode;
  /** pino logger; default: silent. */
  logger?: Logger;
}

/** A running fixture provider (see {@link startFixtureProvider}). */
export interface FixtureProviderHandle {
  /** The MCP Streamable HTTP endpoint, `http://127.0.0.1:<port>/mcp`. */
  url: string;
  /** Base of the control API, `http://127.0.0.1:<port>/control`. */
  controlUrl: string;
  /** The port actually listened on. */
  port: number;
  /** The provider behind the endpoint (same object the control API drives). */
  provider: FixtureProviderService;
  /** Per-key counters, read from the database. */
  stats(): FixtureStats;
  /** The fault switches in force. */
  faults(): FixtureFaults;
  /** Replaces the given switches. @throws ZodError on invalid input (nothing changes). */
  setFaults(patch: Partial<FixtureFaults>): FixtureFaults;
  /** Releases every held response. @returns how many were released. */
  release(): number;
  /** Stops listening, drops open connections (dropped and held calls included), aborts delayed calls, closes the database. Idempotent. */
  close(): Promise<void>;
}

/**
 * Starts the fixture provider over stateless Streamable HTTP (`POST /mcp`, JSON responses) with the
 * control API under `/control`, on `127.0.0.1`. Every route refuses a request whose `Host` or `Origin`
 * is not a loopback name with HTTP 403 (`loopbackHostValidation`).
 * @throws when the database cannot be opened, the faults are invalid, or the port cannot be bound
 *   (e.g. `EADDRINUSE`); nothing is left running then.
 */
export async function startFixtureProvider(options: StartFixtureProviderOptions): Promise<FixtureProviderHandle> {
  const host = options.host ?? "127.0.0.1";
  if (host !== "127.0.0.1") throw new Error(`unsupported host ${String(host)}: only 127.0.0.1 is served`);
  const logger = options.logger ?? pino({ level: "silent" });
  const provider = openFixtureProviderService(options.dbFile, {
    fenceOnLookupMiss: options.fenceOnLookupMiss ?? false,
    ...(options.keyPlacement ? { keyPlacement: options.keyPlacement } : {}),
    advertiseIdempotency: options.advertiseIdempotency ?? false,
    ...(options.taskSupport ? { taskSupport: options.taskSupport } : {}),
    ...(options.taskPollIntervalMs ? { taskPollIntervalMs: options.taskPollIntervalMs } : {}),
    faults: options.faults ?? {},
    exitAfterCommitMode: options.exitAfterCommitMode ?? "drop-response",
    logger,
  });

  const app = new Hono();
  // Listening on 127.0.0.1 is not enough: a page on another site may reach it through DNS rebinding.
  app.use("*", loopbackHostValidation());
  app.all("/mcp", async (c) => {
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    const server = createFixtureMcpServer(provider);
    await server.connect(transport);
    const response = await transport.handleRequest(c.req.raw);
    await server.close();
    return response;
  });
  app.route("/control", createControlRoutes(provider));
  app.notFound((c) => c.json({ error: { code: "not_found", message: `no route ${c.req.method} ${c.req.path}` } }, 404));
  app.onError((error, c) => {
    logger.error({ err: error }, "request failed");
    return c.json({ error: { code: "internal", message: "internal error" } }, 500);
  });

  // Without a custom `createServer`, @hono/node-server builds a plain node:http server.
  const server = createAdaptorServer({ fetch: app.fetch, hostname: host }) as Server;
  let port: number;
  try {
    port = await listen(server, options.port ?? 0, host);
  } catch (error) {
    provider.close();
    throw error;
  }
  const base = `http://${host}:${port}`;
  logger.info({ url: `${base}/mcp` }, "fixture provider listening");

  let closing: Promise<void> | undefined;
  return {
    url: `${base}/mcp`,
    controlUrl: `${base}/control`,
    port,
    provider,
    stats: () => provider.stats(),
    faults: () => provider.faults(),
    setFaults: (patch) => provider.setFaults(patch),
    release: () => provider.release(),
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        provider.close();
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error): void => reject(error);
    server.once("error", onError);
    server.listen(port, host, () => {
      server.off("error", onError);
      const address = server.address();
      if (address === null || typeof address === "string") reject(new Error("the server has no TCP address"));
      else resolve(address.port);
    });
  });
}
