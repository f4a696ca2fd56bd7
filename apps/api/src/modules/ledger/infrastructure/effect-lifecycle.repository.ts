// The usual case of a Driver's claim and success report, each as one compare-and-set plus its attempt row (one PostgreSQL round trip; the claim's attempt on SQLite by a trigger).
import { and, eq, exists, inArray, or, sql, type SQL } from "drizzle-orm";
import { firstRow } from "../../../platform/db/rows.js";
import type { QueryDb, StoreTables, StoreTx } from "../../../platform/db/store.port.js";

/**
 * A value of a statement built once for both dialects: on SQLite a `sql.placeholder` of a prepared
 * query (built once per store), on PostgreSQL the value itself, bound as a parameter of the one `WITH`
 * statement that also writes the attempt.
 */
type Arg = (name: string) => SQL;

const placeholder: Arg = (name) => sql`${sql.placeholder(name)}`;
const valueOf =
  (values: Record<string, unknown>): Arg =>
  (name) =>
    sql`${values[name]}`;

/** True while instance `driverInstanceId` is `connected` on `connectionId` (see `CommandQueueService` in command-queue.service.ts). */
function currentConnection(db: QueryDb, t: StoreTables, arg: Arg): SQL {
  const d = t.driverInstances;
  return exists(
    db
      .select({ one: sql`1` })
      .from(d)
      .where(and(eq(d.id, arg("driverInstanceId")), eq(d.status, "connected"), eq(d.connectionId, arg("connectionId")))),
  );
}

/**
 * {@link currentConnection} for a claim on PostgreSQL, holding the instance row `FOR SHARE` until the
 * claim commits. A finalization updates that row first (docs/DESIGN.md §3 rule 10), so a claim and a
 * finalization of the same instance serialize on it: a claim that waited re-reads the row as the
 * finalization left it (`finalizing`: nothing is dispatched), and a finalization that waited sees the
 * committed `executing` effect and fences it. Without the lock a claim at READ COMMITTED could dispatch
 * an effect whose command the finalization had just failed as never dispatched. SQLite serializes
 * every write transaction, so it needs none.
 */
function lockedCurrentConnection(t: StoreTables, arg: Arg): SQL {
  const d = t.driverInstances;
  return sql`exists (select 1 from ${d} where ${d.id} = ${arg("driverInstanceId")} and ${d.status} = 'connected' and ${d.connectionId} = ${arg("connectionId")} for share)`;
}

/** The claim's `intent → executing` compare-and-set (see {@link effectLifecycleRepository.claimIntent}); `pg`: the PostgreSQL form (row lock). */
function claimUpdate(db: QueryDb, t: StoreTables, arg: Arg, pg: boolean) {
  const { externalToolEffects: e, driverCommands: c } = t;
  return db
    .update(e)
    .set({
      status: "executing",
      version: sql`${e.version} + 1`,
      attemptCount: sql`${e.attemptCount} + 1`,
      firstDispatchedAtMs: sql`coalesce(${e.firstDispatchedAtMs}, ${arg("nowMs")})`,
      lastDispatchedAtMs: arg("nowMs"),
      sendWithinMs: arg("sendWithinMs"),
      updatedAtMs: arg("nowMs"),
    })
    .where(
      and(
        eq(e.commandId, arg("commandId")),
        eq(e.status, "intent"),
        pg ? lockedCurrentConnection(t, arg) : currentConnection(db, t, arg),
        exists(
          db
            .select({ one: sql`1` })
            .from(c)
            .where(
              and(
                eq(c.id, arg("commandId")),
                eq(c.driverInstanceId, arg("driverInstanceId")),
                inArray(c.status, ["queued", "delivered", "accepted"]),
              ),
            ),
        ),
      ),
    )
    .returning({ id: e.id, attemptCount: e.attemptCount, idempotencyKey: e.idempotencyKey });
}

/** The success report's `executing → succeeded` compare-and-set (see {@link effectLifecycleRepository.storeReportedResult}). */
function resultUpdate(db: QueryDb, t: StoreTables, arg: Arg) {
  const { externalToolEffects: e, externalToolEffectAttempts: a } = t;
  return db
    .update(e)
    .set({
      status: "succeeded",
      resolution: "provider_result",
      version: sql`${e.version} + 1`,
      resultJson: arg("resultJson"),
      providerReceiptJson: arg("receiptJson"),
      updatedAtMs: arg("nowMs"),
    })
    .where(
      and(
        eq(e.id, arg("effectId")),
        eq(e.driverInstanceId, arg("driverInstanceId")),
        eq(e.status, "executing"),
        eq(e.attemptCount, arg("attempt")),
        eq(e.serverId, arg("serverId")),
        eq(e.toolName, arg("toolName")),
        eq(e.requestId, arg("requestId")),
        or(
          exists(
            db
              .select({ one: sql`1` })
              .from(a)
              .where(and(eq(a.effectId, arg("effectId")), eq(a.attempt, arg("attempt")), eq(a.connectionId, arg("connectionId")))),
          ),
          currentConnection(db, t, arg),
        ),
      ),
    )
    .returning({ commandId: e.commandId });
}

/** The attempt's end after a stored success; the send report is kept when there is one already (see `decideDeadlineMissed` in effect-lifecycle.machine.ts). */
function attemptFinish(db: QueryDb, t: StoreTables, arg: Arg) {
  const a = t.externalToolEffectAttempts;
  return db
    .update(a)
    .set({
      status: "succeeded",
      providerReceiptJson: arg("receiptJson"),
      finishedAtMs: arg("nowMs"),
      sendReportedAtMs: sql`coalesce(${a.sendReportedAtMs}, ${arg("nowMs")})`,
    })
    .where(and(eq(a.effectId, arg("effectId")), eq(a.attempt, arg("attempt"))));
}

/** What a claim that dispatched answers with: the effect, its new attempt number and its idempotency key. */
export interface DispatchedEffect {
  id: string;
  attemptCount: number;
  idempotencyKey: string;
}

/** The claim's and the success report's usual case (dialect-neutral, one `WITH` statement on PostgreSQL: docs/ARCHITECTURE.md). */
export const effectLifecycleRepository = {
  /**
   * The claim's dispatch (see `decideClaim` in effect-lifecycle.machine.ts) as ONE compare-and-set with its attempt row: moves the
   * effect of command `commandId` from `intent` to `executing` (attempt count + 1, dispatch times, the
   * send-by deadline `sendWithinMs`; `nowMs` in ms) and inserts that attempt (`executing`, on `connectionId`),
   * only while instance `driverInstanceId` is `connected` on `connectionId`, owns the command, and the command
   * has no terminal status. Returns the claim's answer, or undefined when any of that does not hold (nothing
   * written): the caller then reads the rows to tell the cases apart (a refusal, a fence, a stored result).
   * SQLite: one statement (the attempt row is written by the dispatch trigger of migration 0029, the same row
   * PostgreSQL's `WITH` inserts; a compare-and-set that loses changes no row, so no attempt); PostgreSQL: one round trip.
   */
  async claimIntent(
    tx: StoreTx,
    q: { commandId: string; driverInstanceId: string; connectionId: string; sendWithinMs: number; nowMs: number },
  ): Promise<DispatchedEffect | undefined> {
    if (tx.pgRows) {
      const update = claimUpdate(tx.db, tx.tables, valueOf(q), true);
      const rows = await tx.pgRows(sql`WITH claimed AS (${update.getSQL()}),
        attempt AS (INSERT INTO "external_tool_effect_attempts" ("effect_id", "attempt", "status", "connection_id", "started_at_ms")
          SELECT "id", "attempt_count", 'executing', ${q.connectionId}::text, ${q.nowMs}::bigint FROM claimed)
        SELECT "id", "attempt_count", "idempotency_key" FROM claimed`);
      const row = rows[0];
      return row === undefined
        ? undefined
        : { id: String(row.id), attemptCount: Number(row.attempt_count), idempotencyKey: String(row.idempotency_key) };
    }
    // SQLite: the attempt row comes from the dispatch trigger (migration 0029, `external_tool_effects_attempt_on_dispatch`):
    // the UPDATE raises `attempt_count`, and the trigger inserts attempt `attempt_count`, `executing`, on the connection
    // this compare-and-set checked, started at `last_dispatched_at_ms` (= `nowMs`), in the same statement.
    const stmt = tx.prepared("effectLifecycle.claimIntent", (db) => claimUpdate(db, tx.tables, placeholder, false).prepare());
    return firstRow(await stmt.execute(q));
  },
  /**
   * A Driver's success report (see `decideClaim` in effect-lifecycle.machine.ts) as ONE compare-and-set with its attempt's
   * end: stores the result (`resultJson`) and receipt (`receiptJson`, null: none) of effect `effectId`
   * (`executing → succeeded`, resolution `provider_result`; `nowMs` in ms) and ends attempt `attempt`
   * `succeeded` (its send report kept, or set to `nowMs`), only while the effect belongs to
   * `driverInstanceId`, is `executing` at attempt `attempt`, its server, tool and request id are the
   * result's, and `connectionId` made that attempt or is the instance's current connection. Returns the
   * effect's command id, or undefined when any of that does not hold (nothing written): the caller then
   * judges the report on the rows. SQLite: two statements; PostgreSQL: one round trip.
   */
  async storeReportedResult(
    tx: StoreTx,
    q: {
      effectId: string;
      driverInstanceId: string;
      connectionId: string;
      attempt: number;
      serverId: string;
      toolName: string;
      requestId: string;
      resultJson: string;
      receiptJson: string | null;
      nowMs: number;
    },
  ): Promise<string | undefined> {
    if (tx.pgRows) {
      const arg = valueOf(q);
      const rows = await tx.pgRows(sql`WITH stored AS (${resultUpdate(tx.db, tx.tables, arg).getSQL()}),
        finished AS (${attemptFinish(tx.db, tx.tables, arg).getSQL()} AND EXISTS (SELECT 1 FROM stored))
        SELECT "command_id" FROM stored`);
      const row = rows[0];
      return row === undefined ? undefined : String(row.command_id);
    }
    const stmt = tx.prepared("effectLifecycle.storeReportedResult", (db) => resultUpdate(db, tx.tables, placeholder).prepare());
    const stored = firstRow(await stmt.execute(q));
    if (stored === undefined) return undefined;
    const finish = tx.prepared("effectLifecycle.finishAttempt", (db) => attemptFinish(db, tx.tables, placeholder).prepare());
    await finish.execute({ effectId: q.effectId, attempt: q.attempt, receiptJson: q.receiptJson, nowMs: q.nowMs });
    return stored.commandId;
  },
};
