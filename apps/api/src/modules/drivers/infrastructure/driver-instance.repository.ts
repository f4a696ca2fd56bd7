// Reads and compare-and-set writes of the Driver instance rows (`driver_instances`), in SQL both stores speak.
import { and, eq, inArray, lt, or, isNull, sql } from "drizzle-orm";
import type { DriverInstanceStatus } from "@mosoo/contracts";
import type { driverInstances } from "../../../platform/db/sqlite/sqlite-schema.js";
import { firstRow } from "../../../platform/db/rows.js";
import type { StoreTx } from "../../../platform/db/store.port.js";

/** A Driver instance row. Times in ms since the epoch. */
export type DriverInstanceRow = typeof driverInstances.$inferSelect;

/** Reads and compare-and-set writes of `driver_instances` (dialect-neutral: docs/ARCHITECTURE.md). */
export const driverInstanceRepository = {
  /** Inserts one row (throws on a constraint violation: CHECK, unique, foreign key). */
  async insert(tx: StoreTx, row: typeof driverInstances.$inferInsert): Promise<void> {
    await tx.db.insert(tx.tables.driverInstances).values(row);
  },
  /** The row with this id, or undefined. */
  async findById(tx: StoreTx, id: string): Promise<DriverInstanceRow | undefined> {
    const q = tx.prepared("driver.findById", (db) => {
      const d = tx.tables.driverInstances;
      return db
        .select()
        .from(d)
        .where(eq(d.id, sql.placeholder("id")))
        .prepare();
    });
    return firstRow(await q.execute({ id }));
  },
  /** Sets fields when the row is still in one of `fromStatuses`; returns true when it changed. */
  async updateIfStatus(
    tx: StoreTx,
    id: string,
    fromStatuses: readonly DriverInstanceStatus[],
    set: Partial<typeof driverInstances.$inferInsert>,
  ): Promise<boolean> {
    const d = tx.tables.driverInstances;
    const rows = await tx.db
      .update(d)
      .set(set)
      .where(and(eq(d.id, id), inArray(d.status, [...fromStatuses])))
      .returning({ id: d.id });
    return rows.length > 0;
  },
  /** Heartbeat of the current connection; false when `connectionId` is not current or the instance is not connected. */
  async touchHeartbeat(tx: StoreTx, id: string, connectionId: string, nowMs: number): Promise<boolean> {
    const d = tx.tables.driverInstances;
    const rows = await tx.db
      .update(d)
      .set({ lastHeartbeatAtMs: nowMs })
      .where(and(eq(d.id, id), eq(d.connectionId, connectionId), eq(d.status, "connected")))
      .returning({ id: d.id });
    return rows.length > 0;
  },
  /** Instances whose heartbeat is older than `cutoffMs` (never-connected ones by registration time), or whose repair was left half-done. */
  async listExpired(tx: StoreTx, cutoffMs: number): Promise<DriverInstanceRow[]> {
    const d = tx.tables.driverInstances;
    return tx.db
      .select()
      .from(d)
      .where(
        or(
          eq(d.status, "finalizing"),
          and(eq(d.status, "connected"), lt(d.lastHeartbeatAtMs, cutoffMs)),
          and(eq(d.status, "registered"), isNull(d.lastHeartbeatAtMs), lt(d.registeredAtMs, cutoffMs)),
        ),
      );
  },
  /**
   * Deletes the instances that never connected (no connection id, no heartbeat), registered before
   * `cutoffMs`, `registered` or `finalized`, with no run: nothing hangs on them.
   * @returns how many rows were deleted.
   */
  async purgeNeverConnected(tx: StoreTx, cutoffMs: number): Promise<number> {
    const d = tx.tables.driverInstances;
    const rows = await tx.db
      .delete(d)
      .where(
        and(
          inArray(d.status, ["registered", "finalized"]),
          isNull(d.connectionId),
          isNull(d.lastHeartbeatAtMs),
          lt(d.registeredAtMs, cutoffMs),
          sql`NOT EXISTS (SELECT 1 FROM session_runs r WHERE r.driver_instance_id = ${d.id})`,
        ),
      )
      .returning({ id: d.id });
    return rows.length;
  },
  /** Deletes the row; children go by ON DELETE CASCADE unless the fence trigger refuses (`effect.fence_retained`). */
  async delete(tx: StoreTx, id: string): Promise<void> {
    const d = tx.tables.driverInstances;
    await tx.db.delete(d).where(eq(d.id, id));
  },
};
