// The soak's options (stores, kills, restarts, faults, entry mode) and their defaults.
import type { EntryMode } from "../workspace-paths.js";

/** Which store the soak's API runs on: the embedded SQLite file, or a throwaway PostgreSQL server. */
export type SoakStore = "sqlite" | "postgres";

/**
 * Options of `runSoak` (soak-runner.ts): `kills` (Driver SIGKILLs), `seed`, `drivers` (processes), `apiKillRatio`
 * (0–1: rounds that also kill one API instance), `workDir`, `store` (default `sqlite`), `apiInstances`
 * (API processes on the store, default 1; above 1 only with `postgres`, docs/DESIGN.md §11),
 * `heartbeatTtlMs` (the API's `MOSOO_HEARTBEAT_TTL_MS`, default {@link DEFAULT_SOAK_HEARTBEAT_TTL_MS}),
 * `lateRestartRatio` (0–1: killed Drivers restarted only after the TTL, so they are finalized; default
 * {@link DEFAULT_LATE_RESTART_RATIO}), `dbFaults` (database faults, default 0; above 0 only with
 * `postgres`), `reconciliation` (the API's `MOSOO_EFFECT_RECONCILIATION`, default true), `entry` (how the
 * API and Driver processes run, default `compiled`: built once at the start, see {@link EntryMode}; the
 * same processes, signals and schedule either way, a compiled start only costs less CPU).
 */
export interface SoakOptions {
  kills: number;
  seed: number;
  drivers: number;
  apiKillRatio: number;
  workDir: string;
  store?: SoakStore;
  apiInstances?: number;
  heartbeatTtlMs?: number;
  lateRestartRatio?: number;
  dbFaults?: number;
  reconciliation?: boolean;
  entry?: EntryMode;
  /** Progress lines. */
  log: (line: string) => void;
}

/**
 * The soak's default heartbeat TTL (ms): long enough that a Driver restarted at once (a few seconds on a
 * loaded machine) comes back as the same instance, as in production (the API's default is 15 000).
 */
export const DEFAULT_SOAK_HEARTBEAT_TTL_MS = 10_000;
/** The default share of kills whose Driver is restarted only after the TTL (finalization repair). */
export const DEFAULT_LATE_RESTART_RATIO = 0.1;
