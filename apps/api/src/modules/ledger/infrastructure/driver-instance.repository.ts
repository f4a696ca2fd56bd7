import { and, eq, inArray, lt, or, isNull, sql } from "drizzle-orm";
import type { DriverInstanceStatus } from "@mosoo/contracts";
import { driverInstances } from "../../../platform/db/schema.js";
import { preparedQuery } from "../../../platform/db/prepared-query.js";
import type { DbHandle } from "./db-handle.js";

/** A Driver instance row. Times in ms since the epoch. */
export type DriverInstanceRow = typeof driverInstances.$inferSelect;

/** Reads and compare-and-set writes of `driver_instances`. */
export const driverInstanceRepository = {
  /** Inserts one row (throws on a constraint violation: CHECK, unique, foreign key). */
  insert(db: DbHandle, row: typeof driverInstances.$inferInsert): void {
    db.insert(driverInstances).values(row).run();
  },
  /** The row with this id, or undefined. */
  findById(db: DbHandle, id: string): DriverInstanceRow | undefined {
    return preparedQuery(db, "driver.findById", (h) =>
      h
        .select()
        .from(driverInstances)
        .where(eq(driverInstances.id, sql.placeholder("id")))
        .prepare(),
    ).get({ id });
  },
  /** Sets fields when the row is still in one of `fromStatuses`; returns true when it changed. */
  updateIfStatus(
    db: DbHandle,
    id: string,
    fromStatuses: readonly DriverInstanceStatus[],
    set: Partial<typeof driverInstances.$inferInsert>,
  ): boolean {
    const res = db
      .update(driverInstances)
      .set(set)
      .where(and(eq(driverInstances.id, id), inArray(driverInstances.status, [...fromStatuses])))
      .run();
    return res.changes > 0;
  },
  /** Heartbeat of the current connection; false when `connectionId` is not current or the instance is not connected. */
  touchHeartbeat(db: DbHandle, id: string, connectionId: string, nowMs: number): boolean {
    const res = db
      .update(driverInstances)
      .set({ lastHeartbeatAtMs: nowMs })
      .where(and(eq(driverInstances.id, id), eq(driverInstances.connectionId, connectionId), eq(driverInstances.status, "connected")))
      .run();
    return res.changes > 0;
  },
  /** Instances whose heartbeat is older than `cutoffMs` (never-connected ones by registration time), or whose repair was left half-done. */
  listExpired(db: DbHandle, cutoffMs: number): DriverInstanceRow[] {
    return db
      .select()
      .from(driverInstances)
      .where(
        or(
          eq(driverInstances.status, "finalizing"),
          and(eq(driverInstances.status, "connected"), lt(driverInstances.lastHeartbeatAtMs, cutoffMs)),
          and(
            eq(driverInstances.status, "registered"),
            isNull(driverInstances.lastHeartbeatAtMs),
            lt(driverInstances.registeredAtMs, cutoffMs),
          ),
        ),
      )
      .all();
  },
  /**
   * Deletes the instances that never connected (no connection id, no heartbeat), registered before
   * `cutoffMs`, `registered` or `finalized`, with no run: nothing hangs on them (issue 10 finding 3).
   * @returns how many rows were deleted.
   */
  purgeNeverConnected(db: DbHandle, cutoffMs: number): number {
    const res = db
      .delete(driverInstances)
      .where(
        and(
          inArray(driverInstances.status, ["registered", "finalized"]),
          isNull(driverInstances.connectionId),
          isNull(driverInstances.lastHeartbeatAtMs),
          lt(driverInstances.registeredAtMs, cutoffMs),
          sql`NOT EXISTS (SELECT 1 FROM session_runs r WHERE r.driver_instance_id = ${driverInstances.id})`,
        ),
      )
      .run();
    return res.changes;
  },
  /** Deletes the row; children go by ON DELETE CASCADE unless the fence trigger refuses (`effect.fence_retained`). */
  delete(db: DbHandle, id: string): void {
    db.delete(driverInstances).where(eq(driverInstances.id, id)).run();
  },
};
