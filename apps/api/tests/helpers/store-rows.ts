// Rows of the ledger read through the store port's query builder (dialect-neutral: SQLite, PGlite and
// the real PostgreSQL server answer the same camelCase shapes), for the suites that run on every store.
import { asc, eq } from "drizzle-orm";
import type { Store } from "../../src/platform/db/store.port.js";

/** The effect row `id` (undefined when absent). */
export function effectOf(store: Store, id: string) {
  return store.read(
    async (tx) => (await tx.db.select().from(tx.tables.externalToolEffects).where(eq(tx.tables.externalToolEffects.id, id)))[0],
  );
}

/** The attempts of effect `effectId`, by attempt number. */
export function attemptsOf(store: Store, effectId: string) {
  return store.read((tx) => {
    const t = tx.tables.externalToolEffectAttempts;
    return tx.db.select().from(t).where(eq(t.effectId, effectId)).orderBy(asc(t.attempt));
  });
}

/** The command row `id` (undefined when absent). */
export function commandOf(store: Store, id: string) {
  return store.read(async (tx) => (await tx.db.select().from(tx.tables.driverCommands).where(eq(tx.tables.driverCommands.id, id)))[0]);
}

/** The commands of Driver instance `driverInstanceId`, by seq. */
export function commandsOfDriver(store: Store, driverInstanceId: string) {
  return store.read((tx) => {
    const t = tx.tables.driverCommands;
    return tx.db.select().from(t).where(eq(t.driverInstanceId, driverInstanceId)).orderBy(asc(t.seq));
  });
}

/** The events of run `runId`, by seq. */
export function eventsOf(store: Store, runId: string) {
  return store.read((tx) => {
    const t = tx.tables.runEvents;
    return tx.db.select().from(t).where(eq(t.runId, runId)).orderBy(asc(t.seq));
  });
}

/** The reconciliation records of effect `effectId`, in insertion (id, ULID) order. */
export function reconciliationsOf(store: Store, effectId: string) {
  return store.read((tx) => {
    const t = tx.tables.effectReconciliations;
    return tx.db.select().from(t).where(eq(t.effectId, effectId)).orderBy(asc(t.id));
  });
}

/** The operator audit rows of effect `effectId`, in insertion (id, ULID) order. */
export function operatorActionsOf(store: Store, effectId: string) {
  return store.read((tx) => {
    const t = tx.tables.effectOperatorActions;
    return tx.db.select().from(t).where(eq(t.effectId, effectId)).orderBy(asc(t.id));
  });
}
