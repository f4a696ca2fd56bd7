// A store wrapper that holds one armed transaction after its work and before its commit, and a count of PostgreSQL lock waiters.
import { sql } from "drizzle-orm";
import type { Store, StoreTx, TransactionOptions } from "../../src/platform/db/store.port.js";

/**
 * `inner`, except that the next transaction after `arm(skip)` (the `skip` transactions before it pass
 * through) is held after its callback ran and BEFORE it commits, until `release()`; `atCommit`
 * resolves when it is held. On PostgreSQL its row locks are held meanwhile: another unit of work that
 * writes those rows waits for them (see {@link lockWaiters}); SQLite serializes the two.
 */
export function holdingBeforeCommit(inner: Store) {
  let armed: { reached: () => void; held: Promise<void>; skip: number } | undefined;
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop !== "transaction") return Reflect.get(target, prop, receiver) as unknown;
      return <T>(fn: (tx: StoreTx) => Promise<T>, opts?: TransactionOptions): Promise<T> => {
        const hold = armed;
        if (hold && hold.skip > 0) {
          hold.skip -= 1;
          return target.transaction(fn, opts);
        }
        armed = undefined;
        if (!hold) return target.transaction(fn, opts);
        return target.transaction(async (tx) => {
          const out = await fn(tx);
          hold.reached();
          await hold.held;
          return out;
        }, opts);
      };
    },
  });
  return {
    store,
    arm(skip = 0) {
      let reached!: () => void;
      let release!: () => void;
      const atCommit = new Promise<void>((r) => (reached = r));
      const held = new Promise<void>((r) => (release = r));
      armed = { reached, held, skip };
      return { atCommit, release };
    },
  };
}

/** How many backends of this database wait on a lock (PostgreSQL only: `pg_stat_activity`). */
export async function lockWaiters(store: Store): Promise<number> {
  const rows = await store.read((tx) =>
    tx.pgRows!(sql`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`),
  );
  return Number(rows[0]?.["n"] ?? 0);
}
