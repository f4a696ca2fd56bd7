/**
 * Test-only statement capture (issue 13, index justification): records every distinct SQL text the
 * runtime prepares on any better-sqlite3 connection of this process while a capture is on, with the
 * runtime function that prepared it. It wraps `Database.prototype.prepare`, so it depends on no
 * repository or store internals: it must be started before the stores are opened (`openStore` binds
 * `prepare` once when it installs its statement cache). Production code never loads this file.
 */
import { basename } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";

/** One distinct SQL text the runtime prepared, with where: `sources` (`<file> <function>`), `steps` (the workload steps that ran it). */
export interface CapturedStatement {
  sql: string;
  sources: Set<string>;
  steps: Set<string>;
}

/** A running capture ({@link startSqlCapture}). */
export interface SqlCapture {
  /** Names the workload step now running (recorded with each statement prepared from now on). */
  step(name: string): void;
  /** The distinct statements captured so far, in first-seen order. */
  statements(): CapturedStatement[];
  /** Stops recording (stores opened meanwhile keep the wrapper, which then records nothing). */
  stop(): void;
}

/** Statements that are not the runtime's queries: schema changes, pragmas, transaction control, the migrator's bookkeeping. */
const NOT_A_QUERY = /^(?:\s|--[^\n]*\n)*(CREATE|DROP|ALTER|PRAGMA|BEGIN|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE|ANALYZE|VACUUM|EXPLAIN)\b/i;

/** The runtime's source folder, as it appears in stack frames (`/apps/api/src/`). */
const RUNTIME_SRC = /[\\/]apps[\\/]api[\\/]src[\\/]/;
/** This module's own frames (the wrapper around `prepare`). */
const THIS_FILE = basename(fileURLToPath(import.meta.url));
/** Frames of the store plumbing (statement cache, prepared-query memo, migrations): skipped to reach the caller. */
const PLUMBING = /[\\/]platform[\\/]db[\\/]/;

/**
 * The runtime function that prepared a statement: the first stack frame in `apps/api/src/` outside
 * `platform/db/` names the file; the first named frame of that file (an anonymous callback, e.g. the
 * builder of a prepared query, is skipped for the method that called it) names the function, as
 * `<file>.<function>` (e.g. `effect.repository.findById`). Undefined when no runtime code is on the
 * stack (a test helper reading the store, the migrator).
 */
function runtimeCaller(stack: string | undefined): string | undefined {
  let first: string | undefined;
  for (const line of (stack ?? "").split("\n").slice(1)) {
    const m = /^\s*at (?:async )?(?:(.+?) \()?(.+?):\d+:\d+\)?$/.exec(line);
    if (!m) continue;
    const file = m[2]!;
    // the migrator (drizzle's, under openStore) runs the migrations' SQL: not a query of the runtime
    if (/migrator/.test(file)) return undefined;
    if (PLUMBING.test(file) || /node_modules|^node:/.test(file) || file.endsWith(THIS_FILE)) continue;
    // the nearest caller is a test's own code (a callback handed to the runtime): not the runtime's SQL
    if (!RUNTIME_SRC.test(file)) return first;
    const name = basename(file).replace(/\.(ts|js|mts)$/, "");
    if (first !== undefined && name !== first) break;
    first = name;
    const fn = (m[1] ?? "").replace(/^Object\./, "").replace(/^new /, "");
    if (fn && !fn.startsWith("<anonymous>")) return `${name}.${fn}`;
  }
  return first;
}

/**
 * Starts capturing (one capture at a time per process). Every statement prepared from runtime code
 * (see {@link runtimeCaller}) that is a query (not DDL, pragma or transaction control) is recorded
 * once per SQL text, with every runtime function and workload step that prepared it.
 * @throws Error when a capture is already running.
 */
export function startSqlCapture(): SqlCapture {
  const proto = Database.prototype as unknown as { prepare: (this: Database.Database, source: string, ...rest: unknown[]) => unknown };
  if ((proto as { __sqlCapture?: boolean }).__sqlCapture) throw new Error("a SQL capture is already running");
  const original = proto.prepare;
  const seen = new Map<string, CapturedStatement>();
  let active = true;
  let step = "setup";
  proto.prepare = function capturingPrepare(this: Database.Database, source: string, ...rest: unknown[]) {
    if (active && typeof source === "string" && !NOT_A_QUERY.test(source) && !source.includes("__drizzle_migrations")) {
      const limit = Error.stackTraceLimit;
      Error.stackTraceLimit = 80;
      const caller = runtimeCaller(new Error().stack);
      Error.stackTraceLimit = limit;
      if (caller) {
        const entry = seen.get(source) ?? { sql: source, sources: new Set<string>(), steps: new Set<string>() };
        entry.sources.add(caller);
        entry.steps.add(step);
        seen.set(source, entry);
      }
    }
    return original.call(this, source, ...rest);
  };
  (proto as { __sqlCapture?: boolean }).__sqlCapture = true;
  return {
    step: (name) => {
      step = name;
    },
    statements: () => [...seen.values()],
    stop: () => {
      active = false;
      proto.prepare = original;
      (proto as { __sqlCapture?: boolean }).__sqlCapture = false;
    },
  };
}
