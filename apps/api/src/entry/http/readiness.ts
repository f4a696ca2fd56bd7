/** `GET /ready`: whether this API instance can serve now (store answers, schema current, adapter host up). */
import type { Readiness } from "@mosoo/contracts";
import type { Store } from "../../platform/db/store.port.js";

/**
 * Longest time (ms) the readiness probe waits for the store's answer before it says `timeout`. The
 * store's own bounds end the query sooner (PostgreSQL: the query timeout; SQLite: the busy timeout);
 * this is the outer guard that keeps `/ready` answering whatever the driver does.
 */
const READINESS_STORE_BOUND_MS = 3_000;

/**
 * Checks, in this order and cheaply: the store answers one trivial query (the newest applied
 * migration) within {@link READINESS_STORE_BOUND_MS} (`store`: `ok`, `timeout`, or `unavailable` when
 * it failed), the schema is this build's (`schema`: `current`, `behind`, `newer`, or `unknown` when the
 * store did not answer), and the adapter host is up (`adapterHost`: `up` / `closed`, from
 * `adapterHostUp`). `status` is `ready` only when all three are fine. Never throws.
 */
export async function checkReadiness(store: Store, adapterHostUp: () => boolean): Promise<Readiness> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), READINESS_STORE_BOUND_MS);
  });
  let storeCheck: Readiness["checks"]["store"];
  let schema: Readiness["checks"]["schema"] = "unknown";
  try {
    const answer = await Promise.race([store.schemaState(), bound]);
    if (answer === "timeout") storeCheck = "timeout";
    else {
      storeCheck = "ok";
      schema = answer;
    }
  } catch {
    storeCheck = "unavailable";
  } finally {
    clearTimeout(timer);
  }
  const adapterHost = adapterHostUp() ? "up" : "closed";
  const ready = storeCheck === "ok" && schema === "current" && adapterHost === "up";
  return { status: ready ? "ready" : "not_ready", checks: { store: storeCheck, schema, adapterHost } };
}
