// Starts the e2e stack's real processes (fixture provider, API instances, Drivers) with fresh credentials and their config files.
import { randomBytes } from "node:crypto";
import type { KeyPlacement } from "@mosoo/contracts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { entryPoints, type EntryMode } from "./workspace-paths.js";
import { ManagedProcess } from "./managed-process.js";

/**
 * Timeout (ms) for any child process to report that it is ready: a bound for a hung start, not a
 * timing assertion. A start takes 1–3 s on a quiet machine but more than 30 s on the shared 2-core
 * machine at a load average of 15–20 (tsx transpiles each entry point), so the bound is 3 min.
 */
export const READY_TIMEOUT_MS = 180_000;

/**
 * The fixture adapter as a bindings file names it, by package (installed in the API's dependencies),
 * as a user binds any adapter package: `{"package": FIXTURE_ADAPTER_PACKAGE, "options": {"url": ...}}`.
 */
export const FIXTURE_ADAPTER_PACKAGE = { module: "@mosoo/fixture-adapter", export: "fixtureIssueTrackerAdapterFactory" } as const;
/** The same package's variant for the provider WITHOUT a fence (`max_in_flight` 2 s; the send-by deadline test). */
export const FIXTURE_MAX_IN_FLIGHT_ADAPTER_PACKAGE = {
  module: "@mosoo/fixture-adapter",
  export: "fixtureIssueTrackerMaxInFlightAdapterFactory",
} as const;

/** A started fixture MCP provider: its MCP endpoint `url`, its `controlUrl`, and the process. */
export interface ProviderProcess {
  proc: ManagedProcess;
  url: string;
  controlUrl: string;
}

/**
 * Starts the fixture provider (`packages/fixture-provider/src/main.ts`) on a free loopback port
 * with its SQLite file at `dbFile` and extra CLI `flags` (e.g. `--hold-response-after-commit`).
 * @throws Error `e2e.timeout` / `e2e.process_exited` when it does not print its ready line.
 */
export async function startProviderProcess(dbFile: string, flags: string[] = []): Promise<ProviderProcess> {
  const e = entryPoints();
  const proc = new ManagedProcess({
    name: "provider",
    command: e.node,
    args: [...e.nodeArgs, e.provider.main, "--port", "0", "--db", dbFile, ...flags],
    cwd: e.provider.cwd,
  });
  const ready = await proc.waitForLine((j) => j["event"] === "ready", READY_TIMEOUT_MS, "its ready line");
  return { proc, url: String(ready["url"]), controlUrl: String(ready["controlUrl"]) };
}

/**
 * The secrets of one e2e stack, fresh random ones per run: an API key with every
 * scope (`runs:write`, `runs:read`, `runs:delete`, `metrics:read`), the Driver enrollment token and the operator token.
 */
export interface StackCredentials {
  apiKey: string;
  enrollmentToken: string;
  operatorToken: string;
}

/** New random {@link StackCredentials} (192 bits each, base64url). */
export function newStackCredentials(): StackCredentials {
  const secret = () => randomBytes(24).toString("base64url");
  return { apiKey: `e2e_${secret()}`, enrollmentToken: `enr_${secret()}`, operatorToken: `op_${secret()}` };
}

/**
 * The API's credential variables for `credentials`: MOSOO_API_KEYS (key `e2e`), MOSOO_DRIVER_ENROLLMENT_TOKEN,
 * MOSOO_OPERATOR_TOKEN (the operator credential named `demo-operator`: the actor of every operator action).
 */
export function credentialsEnv(credentials: StackCredentials): Record<string, string> {
  return {
    MOSOO_API_KEYS: `e2e:${credentials.apiKey}:runs:write+runs:read+runs:delete+metrics:read`,
    MOSOO_DRIVER_ENROLLMENT_TOKEN: credentials.enrollmentToken,
    MOSOO_OPERATOR_TOKEN: credentials.operatorToken,
    MOSOO_OPERATOR_TOKEN_NAME: "demo-operator",
  };
}

/** A started API: its base `url`, the process, and the credentials it accepts. */
export interface ApiProcess {
  proc: ManagedProcess;
  url: string;
  credentials: StackCredentials;
}

/**
 * Where an API process keeps its ledger: a SQLite file path (`MOSOO_DB_FILE`, one API process per
 * file) or `{ databaseUrl }`, a PostgreSQL database (`MOSOO_DATABASE_URL`; any number of API
 * processes may share it) with an optional `poolSize` (`MOSOO_DATABASE_POOL_SIZE`).
 */
export type ApiStoreLocation = string | { databaseUrl: string; poolSize?: number };

/** The store variables of an API process for `store` (see {@link ApiStoreLocation}). */
export function storeEnv(store: ApiStoreLocation): Record<string, string> {
  if (typeof store === "string") return { MOSOO_DB_FILE: store };
  return {
    MOSOO_DATABASE_URL: store.databaseUrl,
    ...(store.poolSize !== undefined ? { MOSOO_DATABASE_POOL_SIZE: String(store.poolSize) } : {}),
  };
}

/**
 * Starts the API (`apps/api/src/main.ts`) with its store at `store` (a SQLite file path, or
 * `{ databaseUrl }` for PostgreSQL), accepting `credentials` (default: fresh random ones, see
 * {@link newStackCredentials}). `env` adds MOSOO_* variables (e.g. a short `MOSOO_HEARTBEAT_TTL_MS`,
 * or `MOSOO_PORT` for a fixed port; default a free one). `name` labels its log lines (default `api`).
 * @throws Error `e2e.timeout` / `e2e.process_exited` when it does not print `api.listening`.
 */
export async function startApiProcess(
  store: ApiStoreLocation,
  env: Record<string, string> = {},
  credentials: StackCredentials = newStackCredentials(),
  name = "api",
): Promise<ApiProcess> {
  const e = entryPoints();
  const proc = new ManagedProcess({
    name,
    command: e.node,
    args: e.api.args,
    cwd: e.api.cwd,
    env: { ...storeEnv(store), MOSOO_PORT: "0", MOSOO_LOG_LEVEL: "info", ...credentialsEnv(credentials), ...env },
  });
  const ready = await proc.waitForLine((j) => j["msg"] === "api.listening", READY_TIMEOUT_MS, "api.listening");
  return { proc, url: String(ready["url"]), credentials };
}

/**
 * Starts `count` API processes (`api-0`, `api-1`, ...) on ONE PostgreSQL database, one after the
 * other (the first one migrates; the others find the schema current), all accepting the same
 * `credentials`, each on its own free port. `env` as for {@link startApiProcess}. Each one is pushed onto
 * `options.started` as soon as it listens (so the caller can kill what started when a later one fails), and
 * `options.onStarted` is called with it, its index and its start-up time (ms) for progress output.
 * @throws Error as {@link startApiProcess}; the instances already started keep running (the caller kills them).
 */
export async function startApiInstances(
  store: { databaseUrl: string; poolSize?: number },
  count: number,
  options: {
    env?: Record<string, string>;
    credentials?: StackCredentials;
    started?: ApiProcess[];
    onStarted?: (api: ApiProcess, index: number, startMs: number) => void;
  } = {},
): Promise<ApiProcess[]> {
  const credentials = options.credentials ?? newStackCredentials();
  const started = options.started ?? [];
  for (let i = 0; i < count; i++) {
    const t0 = Date.now();
    const api = await startApiProcess(store, options.env ?? {}, credentials, `api-${i}`);
    started.push(api);
    options.onStarted?.(api, i, Date.now() - t0);
  }
  return started;
}

/** A started Driver: the process and the Driver instance id it connected as. */
export interface DriverProcess {
  proc: ManagedProcess;
  driverInstanceId: string;
  connectionId: string;
}

/**
 * Writes the Driver's MCP config (`{servers: {<id>: {type: "http", url, idempotencyKey?}}}`) into
 * `dir` and returns its path. `keyPlacement` (per server id) says where that server wants the key.
 */
export function writeMcpConfig(dir: string, servers: Record<string, string>, keyPlacement: Record<string, KeyPlacement> = {}): string {
  const file = join(dir, "mcp-servers.json");
  const config = {
    servers: Object.fromEntries(
      Object.entries(servers).map(([id, url]) => [
        id,
        { type: "http", url, ...(keyPlacement[id] ? { idempotencyKey: keyPlacement[id] } : {}) },
      ]),
    ),
  };
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

/**
 * A scenario's Driver: {@link startDriverProcess} on `api` (its URL and enrollment token) with the
 * scenario's `stateFile` and `mcpConfigFile`, named `name`; its process is pushed onto `procs` (the
 * scenario stops them all at the end). `finalizeOnExit` as there.
 */
export async function startScenarioDriver(
  api: Pick<ApiProcess, "url" | "credentials">,
  files: { stateFile: string; mcpConfigFile: string },
  name: string,
  procs: ManagedProcess[],
  opts: { finalizeOnExit?: boolean } = {},
): Promise<DriverProcess> {
  const driver = await startDriverProcess({
    apiUrl: api.url,
    stateFile: files.stateFile,
    mcpConfigFile: files.mcpConfigFile,
    name,
    enrollmentToken: api.credentials.enrollmentToken,
    ...opts,
  });
  procs.push(driver.proc);
  return driver;
}

/**
 * Starts a Driver process (`apps/driver/src/main.ts`) against `apiUrl` (one URL, or several API
 * instances on one store: one `--api-url` each, in order; the Driver fails over between them), with the API's
 * `enrollmentToken` in its environment (MOSOO_DRIVER_ENROLLMENT_TOKEN). With the same
 * `stateFile` as an earlier Driver it reconnects as the same Driver instance (a restart). With
 * `finalizeOnExit`, a SIGTERM makes it finalize its instance (the run ends) before it exits. `entry`
 * (default `tsx`) says whether it runs from its TypeScript source or its compiled build (see {@link EntryMode}).
 */
export async function startDriverProcess(opts: {
  apiUrl: string | readonly string[];
  stateFile: string;
  mcpConfigFile: string;
  name: string;
  enrollmentToken: string;
  finalizeOnExit?: boolean;
  /** Extra environment variables (e.g. the `OTEL_*` ones that switch tracing on). */
  env?: Record<string, string>;
  entry?: EntryMode;
}): Promise<DriverProcess> {
  const e = entryPoints(opts.entry);
  const proc = new ManagedProcess({
    name: opts.name,
    command: e.node,
    args: [
      ...e.driver.args,
      ...(typeof opts.apiUrl === "string" ? [opts.apiUrl] : opts.apiUrl).flatMap((url) => ["--api-url", url]),
      ...["--state-file", opts.stateFile, "--mcp-config", opts.mcpConfigFile, "--name", opts.name],
      ...(opts.finalizeOnExit ? ["--finalize-on-exit"] : []),
    ],
    cwd: e.driver.cwd,
    env: { ...opts.env, MOSOO_DRIVER_ENROLLMENT_TOKEN: opts.enrollmentToken },
  });
  const connected = await proc.waitForLine((j) => j["msg"] === "driver.connected", READY_TIMEOUT_MS, "driver.connected");
  return { proc, driverInstanceId: String(connected["driverInstanceId"]), connectionId: String(connected["connectionId"]) };
}
