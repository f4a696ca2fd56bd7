// Refuses a Driver's write unless it comes from the instance's current connection, read inside the caller's transaction.
import { UserFacingError } from "../../../kernel/user-facing-error.js";
import type { DriverInstanceRow } from "./owned-tables.port.js";

/**
 * Throws unless `connectionId` is the instance's current connection (read inside the caller's
 * transaction, so a concurrent reconnect is seen).
 * @throws UserFacingError `driver.connection_superseded`.
 */
export function assertCurrentConnection(instance: DriverInstanceRow | undefined, connectionId: string): void {
  if (!instance || instance.status !== "connected" || instance.connectionId !== connectionId) {
    throw new UserFacingError("driver.connection_superseded", "this connection is no longer current; reconnect", { connectionId });
  }
}
