/**
 * Test-only statement capture (index justification): records every distinct SQL text the
 * runtime runs on any better-sqlite3 connection of this process while a capture is on, with the
 * repository function that ran it (`effect.repository.findById`). Production code never loads this
 * file, and nothing of production code knows about it.
 *
 * How (and why not by wrapping `Database.prototype.prepare`, as it did for the synchronous store):
 * - The store caches compiled statements by SQL text (`sqlite/statement-cache.ts`) and prepared
 *   queries by name (`tx.prepared`), so `prepare` runs once per SQL text and store, and a second
 *   function running the same SQL is never seen there. So the capture records EXECUTIONS instead:
 *   it wraps `run`/`get`/`all`/`iterate` of better-sqlite3's `Statement` prototype and reads the
 *   statement's `source`.
 * - Repositories are async: `await tx.db.select()…` runs drizzle's thenable in a microtask
 *   (`QueryPromise.then` → `execute` → `prepare`/`all`), where the synchronous stack has no frame
 *   of the repository function any more. So the capture wraps every function of every exported
 *   object of every `*.repository.ts` under `apps/api/src` in an `AsyncLocalStorage` scope naming
 *   it `<file>.<function>`; the scope follows the awaits into drizzle's microtasks. The innermost
 *   repository function names the statement. A repository function called from test code (not
 *   from `apps/api/src`) names nothing: its SQL is a test's read, not the runtime's.
 * - Without a repository scope (the migrator, a test reading the store, SQL outside repositories)
 *   the stack names the runtime function as before ({@link runtimeCaller}); the migrator and test
 *   code name nothing.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { readdirSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import Database from "better-sqlite3";

/** One distinct SQL text the runtime ran, with where: `sources` (`<file>.<function>`), `steps` (the workload steps that ran it). */
export interface CapturedStatement {
  sql: string;
  sources: Set<string>;
  steps: Set<string>;
}

/** A running capture ({@link startSqlCapture}). */
export interface SqlCapture {
  /** Names the workload step now running (recorded with each statement run from now on). */
  step(name: string): void;
  /** The distinct statements captured so far, in first-seen order. */
  statements(): CapturedStatement[];
  /** Stops recording and restores the wrapped prototype and repository functions. */
  stop(): void;
}

/** Statements that are not the runtime's queries: schema changes, pragmas, transaction control, the migrator's bookkeeping. */
const NOT_A_QUERY = /^(?:\s|--[^\n]*\n)*(CREATE|DROP|ALTER|PRAGMA|BEGIN|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE|ANALYZE|VACUUM|EXPLAIN)\b/i;

/** The runtime's source folder (`apps/api/src`), on disk and as it appears in stack frames. */
const SRC_DIR = fileURLToPath(new URL("../../src/", import.meta.url));
const RUNTIME_SRC = /[\\/]apps[\\/]api[\\/]src[\\/]/;
/** This module's own frames (the wrappers). */
const THIS_FILE = basename(fileURLToPath(import.meta.url));
/** Frames of the store plumbing (statement cache, prepared-query memo, migrations): skipped to reach the caller. */
const PLUMBING = /[\\/]platform[\\/]db[\\/]/;
/** The frame of a stack line: function name (may be empty) and file. */
const FRAME = /^\s*at (?:async )?(?:(.+?) \()?(.+?):\d+:\d+\)?$/;

/** The repository function a statement runs under: its name, or null when test code called it (its SQL is not the runtime's). */
const scope = new AsyncLocalStorage<string | null>();

/** The current stack, `depth` frames at most (this module's frames included: callers skip them). */
function stackOf(depth: number): string {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = depth;
  const stack = new Error().stack ?? "";
  Error.stackTraceLimit = limit;
  return stack;
}

/**
 * The runtime function that ran a statement outside any repository scope: the first stack frame in
 * `apps/api/src/` outside `platform/db/` names the file; the first named frame of that file (an
 * anonymous callback is skipped for the method that called it) names the function, as
 * `<file>.<function>`. Undefined when no runtime code is on the stack (a test helper reading the
 * store, the migrator).
 */
function runtimeCaller(stack: string): string | undefined {
  let first: string | undefined;
  for (const line of stack.split("\n").slice(1)) {
    const m = FRAME.exec(line);
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

/** True when the nearest frame outside this module and node_modules is runtime code (`apps/api/src`). */
function calledFromRuntime(): boolean {
  for (const line of stackOf(12).split("\n").slice(1)) {
    const m = FRAME.exec(line);
    if (!m) continue;
    const file = m[2]!;
    if (/node_modules|^node:/.test(file) || file.endsWith(THIS_FILE)) continue;
    return RUNTIME_SRC.test(file);
  }
  return false;
}

/** Every `*.repository.ts` file under `dir`. */
function repositoryFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? repositoryFiles(p) : n.endsWith(".repository.ts") ? [p] : [];
  });
}

/**
 * Wraps every function of every exported object of every repository module in a {@link scope}
 * naming it; returns what undoes it.
 * @throws Error when no repository function was found (the layout changed: the capture would name nothing).
 */
async function scopeRepositories(): Promise<() => void> {
  const undo: Array<() => void> = [];
  for (const file of repositoryFiles(SRC_DIR)) {
    const prefix = basename(file).replace(/\.ts$/, "");
    const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    for (const exported of Object.values(mod)) {
      if (!exported || typeof exported !== "object") continue;
      const repo = exported as Record<string, unknown>;
      for (const [key, original] of Object.entries(repo)) {
        if (typeof original !== "function") continue;
        const name = `${prefix}.${key}`;
        const fn = original as (...args: unknown[]) => unknown;
        repo[key] = function scoped(this: unknown, ...args: unknown[]) {
          return scope.run(calledFromRuntime() ? name : null, () => fn.apply(this, args));
        };
        undo.push(() => {
          repo[key] = original;
        });
      }
    }
  }
  if (undo.length === 0) throw new Error(`no repository function found under ${SRC_DIR}`);
  return () => undo.forEach((u) => u());
}

/** The methods of better-sqlite3's `Statement` that run it. */
const RUNNING = ["run", "get", "all", "iterate"] as const;

/**
 * Starts capturing (one capture at a time per process). Every statement the runtime runs (see the
 * module comment) that is a query (not DDL, pragma or transaction control) is recorded once per SQL
 * text, with every runtime function and workload step that ran it.
 * @throws Error when a capture is already running, or no repository function was found.
 */
export async function startSqlCapture(): Promise<SqlCapture> {
  const probe = new Database(":memory:");
  const proto = Object.getPrototypeOf(probe.prepare("SELECT 1")) as Record<string, unknown> & { __sqlCapture?: boolean };
  probe.close();
  if (proto.__sqlCapture) throw new Error("a SQL capture is already running");
  proto.__sqlCapture = true;
  const seen = new Map<string, CapturedStatement>();
  let active = true;
  let step = "setup";
  const record = (source: string) => {
    if (!active || NOT_A_QUERY.test(source) || source.includes("__drizzle_migrations")) return;
    const named = scope.getStore();
    const caller = named === undefined ? runtimeCaller(stackOf(80)) : named;
    if (!caller) return;
    const entry = seen.get(source) ?? { sql: source, sources: new Set<string>(), steps: new Set<string>() };
    entry.sources.add(caller);
    entry.steps.add(step);
    seen.set(source, entry);
  };
  const originals = RUNNING.map((m) => [m, proto[m] as (...args: unknown[]) => unknown] as const);
  for (const [m, original] of originals) {
    proto[m] = function capturing(this: Database.Statement, ...args: unknown[]) {
      record(this.source);
      return original.apply(this, args);
    };
  }
  let unscope: () => void;
  try {
    unscope = await scopeRepositories();
  } catch (err) {
    for (const [m, original] of originals) proto[m] = original;
    proto.__sqlCapture = false;
    throw err;
  }
  return {
    step: (name) => {
      step = name;
    },
    statements: () => [...seen.values()],
    stop: () => {
      active = false;
      for (const [m, original] of originals) proto[m] = original;
      unscope();
      proto.__sqlCapture = false;
    },
  };
}
