/**
 * The soak's database faults (`--db-faults N`, PostgreSQL only): a seeded plan of N faults spread over
 * the run's Driver kills, and the fault itself, done to the soak's own throwaway server.
 */
import type { RunningPostgres } from "@mosoo/test-postgres";
import pg from "pg";

/**
 * A kind of database fault:
 * - `pause`: SIGSTOP of the postmaster and its backends for 5–20 s, then SIGCONT (a stalled host:
 *   connections stay open and hang);
 * - `crash`: an immediate shutdown (no checkpoint, every connection cut), down 2–10 s, then a restart
 *   on the same data folder and port (the server runs with fsync on, so every committed row survives);
 * - `terminate`: `pg_terminate_backend` of every connection of the API processes (their pools and
 *   their LISTEN connections; `application_name` `mosoo-api` / `mosoo-command-wakeups`).
 */
export type DbFaultKind = "pause" | "crash" | "terminate";

/** Every kind, in the order the summary line prints them. */
export const DB_FAULT_KINDS: readonly DbFaultKind[] = ["pause", "crash", "terminate"];

/** One planned fault: its kind, the Driver-kill count at which it starts, and how long it lasts (ms; 0 for `terminate`). */
export interface DbFault {
  kind: DbFaultKind;
  atKill: number;
  durationMs: number;
}

/** Bounds (ms) of a pause and of a crash's downtime. */
const PAUSE_MS = { min: 5_000, max: 20_000 } as const;
const CRASH_DOWN_MS = { min: 2_000, max: 10_000 } as const;

/** The `application_name`s of the API's connections (the API's defaults; see postgres-store.ts and server.ts). */
const API_APPLICATION_NAMES = ["mosoo-api", "mosoo-command-wakeups"] as const;

/**
 * Plans `count` faults over a run of `kills` Driver kills: fault i starts once `floor(i × kills / count)`
 * kills are done (the first at once, the last in the final stretch), each of a kind and a duration drawn
 * from `random` (a seeded PRNG in [0, 1): the same seed gives the same plan). Pure.
 */
export function planDbFaults(count: number, kills: number, random: () => number): DbFault[] {
  const between = (b: { min: number; max: number }) => b.min + Math.floor(random() * (b.max - b.min + 1));
  return Array.from({ length: count }, (_, i) => {
    const kind = DB_FAULT_KINDS[Math.floor(random() * DB_FAULT_KINDS.length)]!;
    const durationMs = kind === "pause" ? between(PAUSE_MS) : kind === "crash" ? between(CRASH_DOWN_MS) : 0;
    return { kind, atKill: Math.floor((i * kills) / count), durationMs };
  });
}

/** What one applied fault did: its plan, when it began and ended (ms since the epoch), and a detail for the log. */
export interface AppliedDbFault extends DbFault {
  startedAtMs: number;
  endedAtMs: number;
  detail: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Terminates every backend of the API's connections on `server`; returns how many were terminated.
 * @throws Error (the `pg` error) when the server cannot be reached.
 */
async function terminateApiBackends(server: RunningPostgres): Promise<number> {
  const client = new pg.Client({ connectionString: server.url, application_name: "mosoo-soak", connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    const res = await client.query<{ n: string }>(
      "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE application_name = ANY($1)",
      [API_APPLICATION_NAMES],
    );
    return Number(res.rows[0]?.n ?? 0);
  } finally {
    await client.end();
  }
}

/**
 * Applies one fault to `server` and resolves when it is over (the server answers again or, for
 * `terminate`, the backends were told to end). A restart that fails is tried again every second (the
 * server must come back for the soak to go on).
 * @throws Error when a `terminate` cannot reach the server (the `pg` error).
 */
export async function applyDbFault(server: RunningPostgres, fault: DbFault): Promise<AppliedDbFault> {
  const startedAtMs = Date.now();
  let detail: string;
  if (fault.kind === "pause") {
    const pids = server.pause();
    try {
      await sleep(fault.durationMs);
    } finally {
      server.resume();
    }
    detail = `${pids.length} processes frozen ${fault.durationMs} ms`;
  } else if (fault.kind === "crash") {
    await server.crash();
    await sleep(fault.durationMs);
    let tries = 1;
    for (; ; tries += 1) {
      try {
        await server.restart();
        break;
      } catch (error) {
        if (tries >= 30) throw error;
        await sleep(1_000);
      }
    }
    detail = `down ${fault.durationMs} ms, restarted (${tries} ${tries === 1 ? "try" : "tries"})`;
  } else {
    detail = `${await terminateApiBackends(server)} API backends terminated`;
  }
  return { ...fault, startedAtMs, endedAtMs: Date.now(), detail };
}
