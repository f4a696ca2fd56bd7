// The span of each unit of work of a store (OpenTelemetry; a no-op unless tracing is started).
import { withSpan } from "@mosoo/telemetry";

/**
 * Runs one unit of work of a store inside a span named `store.transaction` (a write unit of work,
 * `Store.transaction`) or `store.read` (`Store.read`), with `db.system.name` = `sqlite` or
 * `postgresql` (OpenTelemetry database semantic conventions). The span covers the wait for the
 * store (SQLite's mutex, a PostgreSQL pool connection) and every retry of the unit of work; a
 * rejection marks it failed with the error's code (`store.busy`, …) as `error.type`.
 */
export function traceUnitOfWork<T>(unit: "transaction" | "read", dialect: "sqlite" | "postgres", fn: () => Promise<T>): Promise<T> {
  return withSpan(`store.${unit}`, { "db.system.name": dialect === "postgres" ? "postgresql" : "sqlite" }, fn);
}
