// The transitions and rows the database itself refuses (docs/DESIGN.md §3 rule 9 and the CHECK /
// partial unique constraints of the schema), proved with the same SQL on the three stores: SQLite
// (the production migrations in apps/api/drizzle), PGlite and a real PostgreSQL server (the
// migrations in apps/api/drizzle-pg). Each scenario runs inside BEGIN … ROLLBACK on a freshly seeded run.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPgliteTarget, openPostgresTarget, openSqliteTarget, type SqlOutcome, type SqlTarget } from "./helpers/pg-sql-targets.js";

const SEED = `
INSERT INTO driver_instances (id, name, status, token_hash, registered_at_ms) VALUES ('d1', 'driver', 'connected', 'h', 1);
INSERT INTO sessions (id, created_at_ms) VALUES ('s1', 1);
INSERT INTO session_runs (id, session_id, driver_instance_id, status, created_at_ms, updated_at_ms) VALUES ('r1', 's1', 'd1', 'active', 1, 1);
`;

interface EffectOptions {
  compensates?: string;
  clientToolCallId?: string;
  attention?: string;
  attempts?: number;
}

/** A command and its effect in `status` (a valid row: resolution, attempts and result as the CHECKs want them). */
function effect(id: string, status: string, o: EffectOptions = {}): string {
  const resolution = status === "succeeded" ? "'provider_result'" : status === "not_executed" ? "'reconciled'" : "NULL";
  const attempts = o.attempts ?? (status === "intent" ? 0 : 1);
  const result = status === "succeeded" ? "'{}'" : "NULL";
  const str = (v: string | undefined) => (v === undefined ? "NULL" : `'${v}'`);
  const seq = Number(id.replace(/\D/g, "")) || 1;
  return `
INSERT INTO driver_commands (id, driver_instance_id, run_id, seq, type, status, payload_json, created_at_ms, updated_at_ms)
  VALUES ('c_${id}', 'd1', 'r1', ${seq}, 'mcp.execute', 'accepted', '{}', 1, 1);
INSERT INTO external_tool_effects (id, command_id, run_id, driver_instance_id, server_id, tool_name, tool_call_id, client_tool_call_id,
  request_id, arguments_json, idempotency_key, request_fingerprint, status, resolution, attempt_count, result_json, operator_attention,
  created_at_ms, updated_at_ms, compensates_effect_id)
  VALUES ('${id}', 'c_${id}', 'r1', 'd1', 'srv', 'tool', 'tc_${id}', ${str(o.clientToolCallId)}, 'rq', '{}', '${id.padEnd(26, "K")}',
  '${"f".repeat(64)}', '${status}', ${resolution}, ${attempts}, ${result}, ${str(o.attention)}, 1, 1, ${str(o.compensates)});`;
}

function event(id: string, seq: number, type: string, terminal: boolean): string {
  return `INSERT INTO run_events (id, run_id, seq, type, terminal, payload_json, created_at_ms) VALUES ('${id}', 'r1', ${seq}, '${type}', ${terminal}, '{}', 1);`;
}

function reconciliation(id: string, outcome: string): string {
  const receipt = outcome.startsWith("confirmed") ? "'{}'" : "NULL";
  const result = outcome === "confirmed_succeeded" ? "'{}'" : "NULL";
  return `INSERT INTO effect_reconciliations (id, effect_id, adapter_id, adapter_version, trigger, outcome, receipt_json, result_json, started_at_ms, finished_at_ms)
  VALUES ('${id}', 'e1', 'a', '1', 'sweep', '${outcome}', ${receipt}, ${result}, 1, 1);`;
}

/** The expectation of a scenario: `ok`, or the refusal (kind, and the constraint name for CHECKs everywhere and for unique indexes on PostgreSQL). */
type Expect = "ok" | { kind: string; constraint?: string };

interface Scenario {
  name: string;
  setup: string;
  statement: string;
  expect: Expect;
}

const fence = { kind: "fence_retained" } as const;
const check = (constraint: string) => ({ kind: "check_violation", constraint });
const unique = (constraint: string) => ({ kind: "unique_violation", constraint });

const SCENARIOS: Scenario[] = [
  // The fence (docs/DESIGN.md §3 rule 9): an executing or unknown effect is never deleted, directly or by a cascade.
  {
    name: "delete of an executing effect",
    setup: effect("e1", "executing"),
    statement: "DELETE FROM external_tool_effects WHERE id = 'e1'",
    expect: fence,
  },
  {
    name: "delete of an unknown effect",
    setup: effect("e1", "unknown"),
    statement: "DELETE FROM external_tool_effects WHERE id = 'e1'",
    expect: fence,
  },
  { name: "cascade from its run", setup: effect("e1", "unknown"), statement: "DELETE FROM session_runs WHERE id = 'r1'", expect: fence },
  { name: "cascade from its session", setup: effect("e1", "executing"), statement: "DELETE FROM sessions WHERE id = 's1'", expect: fence },
  {
    name: "cascade from its Driver instance",
    setup: effect("e1", "unknown"),
    statement: "DELETE FROM driver_instances WHERE id = 'd1'",
    expect: fence,
  },
  {
    name: "cascade from its command",
    setup: effect("e1", "executing"),
    statement: "DELETE FROM driver_commands WHERE id = 'c_e1'",
    expect: fence,
  },
  {
    name: "delete of an intent effect",
    setup: effect("e1", "intent"),
    statement: "DELETE FROM external_tool_effects WHERE id = 'e1'",
    expect: "ok",
  },
  {
    name: "delete of a run whose effects are settled",
    setup: effect("e1", "succeeded") + effect("e2", "not_executed"),
    statement: "DELETE FROM session_runs WHERE id = 'r1'",
    expect: "ok",
  },
  // CHECKs: statuses are unions; invariants between columns.
  {
    name: "an effect status outside the union",
    setup: effect("e1", "executing"),
    statement: "UPDATE external_tool_effects SET status = 'bogus'",
    expect: check("external_tool_effects_status_check"),
  },
  {
    name: "a run status outside the union",
    setup: "",
    statement: "UPDATE session_runs SET status = 'bogus'",
    expect: check("session_runs_status_check"),
  },
  {
    name: "a Driver status outside the union",
    setup: "",
    statement: "UPDATE driver_instances SET status = 'gone'",
    expect: check("driver_instances_status_check"),
  },
  {
    name: "an intent with an attempt",
    setup: effect("e1", "intent", { attempts: 1 }),
    statement: "SELECT 1",
    expect: check("external_tool_effects_attempt_check"),
  },
  {
    name: "a lease owner without an expiry",
    setup: effect("e1", "unknown"),
    statement: "UPDATE external_tool_effects SET lease_owner = 'me'",
    expect: check("external_tool_effects_lease_check"),
  },
  {
    name: "contradicted_by_provider on an unsettled effect",
    setup: effect("e1", "unknown"),
    statement: "UPDATE external_tool_effects SET operator_attention = 'contradicted_by_provider'",
    expect: check("external_tool_effects_contradiction_check"),
  },
  {
    name: "contradicted_by_provider on a settled effect",
    setup: effect("e1", "succeeded"),
    statement: "UPDATE external_tool_effects SET operator_attention = 'contradicted_by_provider'",
    expect: "ok",
  },
  {
    name: "a deadline_missed resolution on a success",
    setup: effect("e1", "succeeded"),
    statement: "UPDATE external_tool_effects SET resolution = 'deadline_missed'",
    expect: check("external_tool_effects_resolution_status_check"),
  },
  {
    name: "a short idempotency key",
    setup: effect("e1", "intent"),
    statement: "UPDATE external_tool_effects SET idempotency_key = 'x'",
    expect: check("external_tool_effects_key_check"),
  },
  {
    name: "a terminal flag that does not match the event type",
    setup: "",
    statement: event("v1", 1, "run.completed", false),
    expect: check("run_events_terminal_check"),
  },
  {
    name: "a finalized Driver without finalized_at_ms",
    setup: "",
    statement: "UPDATE driver_instances SET status = 'finalized'",
    expect: check("driver_instances_finalized_check"),
  },
  // Partial unique indexes.
  {
    name: "a second active run of one Driver",
    setup: "",
    statement:
      "INSERT INTO session_runs (id, session_id, driver_instance_id, status, created_at_ms, updated_at_ms) VALUES ('r2', 's1', 'd1', 'active', 1, 1)",
    expect: unique("session_runs_one_active_per_driver"),
  },
  {
    name: "a second, completed run of one Driver",
    setup: "",
    statement:
      "INSERT INTO session_runs (id, session_id, driver_instance_id, status, created_at_ms, updated_at_ms) VALUES ('r2', 's1', 'd1', 'completed', 1, 1)",
    expect: "ok",
  },
  {
    name: "a second terminal event of a run",
    setup: event("v1", 1, "run.completed", true),
    statement: event("v2", 2, "run.failed", true),
    expect: unique("run_events_one_terminal"),
  },
  {
    name: "two non-terminal events of a run",
    setup: event("v1", 1, "run.created", false),
    statement: event("v2", 2, "tool_call.queued", false),
    expect: "ok",
  },
  {
    name: "a repeated event seq",
    setup: event("v1", 1, "run.created", false),
    statement: event("v2", 1, "tool_call.queued", false),
    expect: unique("run_events_run_seq"),
  },
  {
    name: "two compensations of one effect in flight",
    setup: effect("e1", "succeeded") + effect("e2", "executing", { compensates: "e1" }),
    statement: effect("e3", "unknown", { compensates: "e1" }),
    expect: unique("external_tool_effects_one_compensation_in_flight"),
  },
  {
    name: "a compensation in flight beside one confirmed not executed",
    setup: effect("e1", "succeeded") + effect("e2", "not_executed", { compensates: "e1" }),
    statement: effect("e3", "executing", { compensates: "e1" }),
    expect: "ok",
  },
  {
    name: "two confirmed reconciliations of one effect",
    setup: effect("e1", "not_executed") + reconciliation("x1", "confirmed_not_executed"),
    statement: reconciliation("x2", "confirmed_succeeded"),
    expect: unique("effect_reconciliations_one_confirmed"),
  },
  {
    name: "two still_unknown reconciliations",
    setup: effect("e1", "unknown") + reconciliation("x1", "still_unknown"),
    statement: reconciliation("x2", "still_unknown"),
    expect: "ok",
  },
  {
    name: "a repeated client toolCallId in one run",
    setup: effect("e1", "intent", { clientToolCallId: "t" }),
    statement: effect("e2", "intent", { clientToolCallId: "t" }),
    expect: unique("external_tool_effects_run_client_tool_call_unique"),
  },
  { name: "two generated toolCallIds (NULL) in one run", setup: effect("e1", "intent"), statement: effect("e2", "intent"), expect: "ok" },
  {
    name: "a command seq used twice by one Driver",
    setup: effect("e1", "intent"),
    statement:
      "INSERT INTO driver_commands (id, driver_instance_id, run_id, seq, type, status, payload_json, created_at_ms, updated_at_ms) VALUES ('c9', 'd1', 'r1', 1, 'mcp.execute', 'queued', '{}', 1, 1)",
    expect: unique("driver_commands_instance_seq"),
  },
  {
    name: "a command of a run that does not exist",
    setup: "",
    statement:
      "INSERT INTO driver_commands (id, driver_instance_id, run_id, seq, type, status, payload_json, created_at_ms, updated_at_ms) VALUES ('c9', 'd1', 'nope', 1, 'mcp.execute', 'queued', '{}', 1, 1)",
    expect: { kind: "foreign_key_violation" },
  },
];

/** Runs a scenario in BEGIN … ROLLBACK and says what its statement (or, for a refusal already in the setup, the setup) came to. */
async function run(target: SqlTarget, s: Scenario): Promise<SqlOutcome> {
  await target.exec("BEGIN");
  try {
    await target.exec(SEED);
    await target.exec(s.setup);
    await target.exec(s.statement);
    return "ok";
  } catch (err) {
    return target.outcomeOf(err);
  } finally {
    await target.exec("ROLLBACK");
  }
}

const TARGETS: [string, () => Promise<SqlTarget>][] = [
  ["sqlite", openSqliteTarget],
  ["pglite", openPgliteTarget],
  ["postgres", () => openPostgresTarget("pg_constraints")],
];

describe.each(TARGETS)("constraints the database enforces on %s", (_name, open) => {
  let target: SqlTarget;
  // PGlite's WASM start and a real server's database take seconds on a busy 2-core machine: a bound for a hang.
  beforeAll(async () => {
    target = await open();
  }, 120_000);
  afterAll(async () => {
    await target?.close();
  });

  it.each(SCENARIOS.map((s) => [s.name, s] as const))("%s", async (_n, scenario) => {
    const outcome = await run(target, scenario);
    if (scenario.expect === "ok") return expect(outcome).toBe("ok");
    // SQLite names the columns, not the index, of a unique failure; PostgreSQL names the index.
    const expected =
      target.name === "sqlite" && scenario.expect.kind !== "check_violation" ? { kind: scenario.expect.kind } : scenario.expect;
    expect(outcome).toMatchObject(expected);
  });

  it("leaves nothing behind after the scenarios (every one rolled back)", async () => {
    expect(await target.rows("SELECT id FROM external_tool_effects")).toEqual([]);
    expect(await target.rows("SELECT id FROM driver_instances")).toEqual([]);
  });

  if (_name !== "sqlite") {
    it("reports the fence with the same message as SQLite's RAISE and the trigger's name as the constraint", async () => {
      await target.exec("BEGIN");
      try {
        await target.exec(SEED + effect("e1", "unknown"));
        const err = await target.exec("DELETE FROM external_tool_effects WHERE id = 'e1'").then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toMatchObject({ message: "effect.fence_retained", code: "23001", constraint: "external_tool_effects_fence_retained" });
        expect((err as { detail?: string }).detail).toContain("e1");
      } finally {
        await target.exec("ROLLBACK");
      }
    });

    // TRUNCATE skips row triggers; the statement trigger of drizzle-pg/0004 refuses it on the effects table
    // and on every table whose CASCADE truncation empties it. SQLite has no TRUNCATE (a `DELETE FROM` without
    // WHERE fires the row trigger, covered by the cascade scenarios above), so these run on PostgreSQL only.
    const TRUNCATES = [
      "TRUNCATE external_tool_effects CASCADE",
      "TRUNCATE driver_instances CASCADE",
      "TRUNCATE driver_commands CASCADE",
      "TRUNCATE session_runs CASCADE",
      "TRUNCATE sessions CASCADE",
    ];
    it.each(TRUNCATES.flatMap((t) => [[t, "executing"] as const, [t, "unknown"] as const]))(
      "refuses %s while an effect is %s (fence_retained, the row trigger's error)",
      async (statement, status) => {
        await target.exec("BEGIN");
        try {
          await target.exec(SEED + effect("e1", status));
          const err = await target.exec(statement).then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(err).toMatchObject({
            message: "effect.fence_retained",
            code: "23001",
            constraint: "external_tool_effects_fence_retained",
          });
          expect(target.outcomeOf(err)).toMatchObject(fence);
        } finally {
          await target.exec("ROLLBACK");
        }
      },
    );

    it("allows TRUNCATE … CASCADE when no effect is executing or unknown", async () => {
      await target.exec("BEGIN");
      try {
        await target.exec(SEED + effect("e1", "intent"));
        await target.exec("TRUNCATE driver_instances CASCADE");
        expect(await target.rows("SELECT id FROM external_tool_effects")).toEqual([]);
      } finally {
        await target.exec("ROLLBACK");
      }
    });
  }
});
