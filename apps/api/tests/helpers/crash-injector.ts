/**
 * Crash injection at durable writes (SQLite's `writecrash.test` idea): counts every durable
 * write of one store and throws {@link SimulatedCrash} at a chosen one. A durable write is one
 * `Store.transaction` (seen through the store port's `observeDurableWrites` seam, implemented by
 * `src/platform/db/sqlite/sqlite-store.ts`; every write of the services is one, lease take/release
 * and heartbeats included) or one autocommit INSERT/UPDATE/DELETE statement a test runs outside a
 * transaction on the raw connection (wrapped here at `prepare`). After a crash the store is dead:
 * every later write on it throws {@link SimulatedCrash} too, as nothing runs in a killed process.
 */
import type { Store } from "../kit/store.js";
import type { Store as PortStore } from "../../src/platform/db/store.port.js";

/** The error a simulated process death throws; `writeIndex` is the 1-based durable write it hit (0 for a named point). */
export class SimulatedCrash extends Error {
  override readonly name = "SimulatedCrash";
  constructor(
    readonly where: string,
    readonly writeIndex = 0,
  ) {
    super(`simulated crash ${where}`);
  }
}

/** True for a {@link SimulatedCrash}. */
export function isSimulatedCrash(error: unknown): error is SimulatedCrash {
  return error instanceof SimulatedCrash;
}

/**
 * Where to crash: at the `atWrite`-th durable write counted from {@link CrashInjector.attach}
 * (1-based), either `before_commit` (the write is rolled back) or `after_commit` (it is durable, the
 * caller never learns it).
 */
export interface CrashPlan {
  atWrite: number;
  phase: "before_commit" | "after_commit";
}

const WRITE_SQL = /^\s*(insert|update|delete|replace)\b/i;

/** Counts durable writes of one store and crashes at a {@link CrashPlan}. */
export class CrashInjector {
  /** Durable writes started so far (1-based index of the latest). */
  writes = 0;
  /** Set once a crash fired: the store is dead. */
  crashed: SimulatedCrash | null = null;
  private plan: CrashPlan | null = null;

  /** Crash at `plan` (replaces any earlier plan). */
  arm(plan: CrashPlan): void {
    this.plan = plan;
  }

  /** Crash at the next durable write, before it commits. */
  armNext(): void {
    this.plan = { atWrite: this.writes + 1, phase: "before_commit" };
  }

  disarm(): void {
    this.plan = null;
  }

  /**
   * Wraps `store` (call right after `openStore`; migrations are not counted). On a PostgreSQL store
   * only the port's seam is observed (tests run no raw autocommit writes there), and a dead store's
   * reads are not refused: the lab restarts at once after a crash.
   */
  attach(store: PortStore): void {
    store.observeDurableWrites({
      beforeCommit: () => this.before(),
      afterCommit: () => this.after(),
    });
    if (store.dialect !== "sqlite") return;
    const sqlite = (store as Store).sqlite;
    const prepare = sqlite.prepare.bind(sqlite);
    sqlite.prepare = ((source: string) => {
      if (this.crashed) throw this.crashed; // a dead process runs nothing, reads included
      const stmt = prepare(source);
      if (!WRITE_SQL.test(source)) return stmt;
      for (const method of ["run", "get", "all"] as const) {
        const original = (stmt[method] as (...args: unknown[]) => unknown).bind(stmt);
        (stmt as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
          if (sqlite.inTransaction) {
            if (this.crashed) throw this.crashed;
            return original(...args);
          }
          this.before();
          const out = original(...args);
          this.after();
          return out;
        };
      }
      return stmt;
    }) as typeof sqlite.prepare;
  }

  private before(): void {
    if (this.crashed) throw this.crashed;
    this.writes += 1;
    if (this.plan && this.plan.phase === "before_commit" && this.plan.atWrite === this.writes) this.fire();
  }

  private after(): void {
    if (this.plan && this.plan.phase === "after_commit" && this.plan.atWrite === this.writes) this.fire();
  }

  private fire(): never {
    this.crashed = new SimulatedCrash(`at durable write ${this.writes} (${this.plan!.phase})`, this.writes);
    this.plan = null;
    throw this.crashed;
  }
}
