// On PostgreSQL (PGlite), the hot-path statements that could read a table's history read the index that
// bounds it: the statements are the repositories' own (captured as PGlite receives them), planned with
// `EXPLAIN` on a store where finished history outnumbers what is open, after ANALYZE.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPglite, type PgliteHandle } from "../src/platform/db/postgres/migrate-pglite.js";
import * as pgSchema from "../src/platform/db/postgres/postgres-schema.js";
import { commandRepository } from "../src/modules/drivers/infrastructure/command.repository.js";
import { driverInstanceRepository } from "../src/modules/drivers/infrastructure/driver-instance.repository.js";
import type { QueryDb, StoreTx } from "../src/platform/db/store.port.js";

const NOW = 1_800_000_000_000;
const PAST_COMMANDS = 3000;
const FINALIZED_DRIVERS = 3000;

let h: PgliteHandle;
let tx: StoreTx;
/** Every statement PGlite received since the last {@link captured} call, with its parameters. */
let seen: Array<{ sql: string; params: unknown[] }> = [];

beforeAll(async () => {
  h = await openPglite();
  const client = h.client as unknown as { query: (sql: string, params?: unknown[], ...rest: unknown[]) => Promise<unknown> };
  const original = client.query.bind(client);
  client.query = (sql, params, ...rest) => {
    seen.push({ sql, params: params ?? [] });
    return original(sql, params, ...rest);
  };
  tx = {
    db: h.db as unknown as QueryDb,
    tables: pgSchema as unknown as StoreTx["tables"],
    prepared: (_name, build) => build(h.db as unknown as QueryDb),
  };
  await h.client.exec(`
    INSERT INTO driver_instances (id, name, status, token_hash, connection_id, last_heartbeat_at_ms, registered_at_ms, last_command_seq)
      VALUES ('long-lived', 'long-lived', 'connected', 'x', 'c1', ${NOW}, ${NOW}, ${PAST_COMMANDS + 1});
    INSERT INTO driver_instances (id, name, status, token_hash, connection_id, last_heartbeat_at_ms, registered_at_ms, finalized_at_ms)
      SELECT 'f' || i, 'f', 'finalized', 'x', 'c' || i, ${NOW}, ${NOW}, ${NOW} FROM generate_series(1, ${FINALIZED_DRIVERS}) AS i;
    INSERT INTO sessions (id, created_at_ms) VALUES ('s1', ${NOW});
    INSERT INTO session_runs (id, session_id, driver_instance_id, status, created_at_ms, updated_at_ms) VALUES ('r1', 's1', 'long-lived', 'active', ${NOW}, ${NOW});
    INSERT INTO driver_commands (id, driver_instance_id, run_id, seq, type, status, payload_json, result_json, created_at_ms, updated_at_ms, terminal_at_ms)
      SELECT 'c' || i, 'long-lived', 'r1', i, 'mcp.execute', 'completed', '{}', '{}', ${NOW}, ${NOW}, ${NOW} FROM generate_series(1, ${PAST_COMMANDS}) AS i;
    INSERT INTO driver_commands (id, driver_instance_id, run_id, seq, type, status, payload_json, created_at_ms, updated_at_ms)
      VALUES ('open', 'long-lived', 'r1', ${PAST_COMMANDS + 1}, 'mcp.execute', 'queued', '{}', ${NOW}, ${NOW});
    ANALYZE;
  `);
}, 120_000);
afterAll(() => h?.close());

/** Runs `fn` and returns the `EXPLAIN` lines of each statement it sent. */
async function plansOf(fn: () => Promise<unknown>): Promise<string[][]> {
  seen = [];
  await fn();
  const statements = seen;
  seen = [];
  const plans: string[][] = [];
  for (const s of statements) {
    const r = (await h.client.query(`EXPLAIN ${s.sql}`, s.params)) as { rows: Array<Record<string, string>> };
    plans.push(r.rows.map((row) => Object.values(row)[0]!));
  }
  return plans;
}

describe("PostgreSQL plans of the history-bound hot paths", () => {
  it("a delivery reads the open-command index, not the Driver's finished commands", async () => {
    const plans = await plansOf(async () => {
      expect((await commandRepository.findUndeliveredOnConnection(tx, "long-lived", "c1"))?.id).toBe("open");
    });
    expect(plans).toHaveLength(1);
    expect(plans[0]!.join("\n")).toContain("driver_commands_open_idx");
  });

  it("the Driver's open commands (reconnect, finalization) read the open-command index", async () => {
    const plans = await plansOf(async () => {
      expect((await commandRepository.listNonTerminalOfDriver(tx, "long-lived")).map((c) => c.id)).toEqual(["open"]);
    });
    expect(plans[0]!.join("\n")).toContain("driver_commands_open_idx");
  });

  it("the sweep's expired and never-connected instances read the (status, heartbeat) index, not the finalized ones", async () => {
    const plans = await plansOf(async () => {
      expect(await driverInstanceRepository.listExpired(tx, NOW - 1)).toEqual([]);
    });
    expect(plans[0]!.join("\n")).toContain("driver_instances_status_heartbeat_idx");
    expect(plans[0]!.join("\n")).not.toMatch(/Seq Scan on driver_instances/);
  });
});
