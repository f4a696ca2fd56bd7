// Reads and compare-and-set writes of reconciliation state (the effect's lease and outcome) and its lookup records.
import { and, asc, eq, gt, inArray, isNotNull, isNull, lt, lte, or, sql } from "drizzle-orm";
import type { effectReconciliations, externalToolEffects } from "../../../platform/db/sqlite/sqlite-schema.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import { argumentsFor, placeholdersFor, shapeOf } from "../../../platform/db/prepared-shapes.js";
import { sqliteOutcomeWriteRepository } from "./sqlite-outcome-write.repository.js";

/** A reconciliation record row. */
export type ReconciliationRow = typeof effectReconciliations.$inferSelect;

/** Reads and compare-and-set writes of reconciliation state (effect lease, outcome) and records (dialect-neutral: docs/ARCHITECTURE.md). */
export const reconciliationRepository = {
  /**
   * Takes the effect's lease for `owner` until `expiresAtMs` (ms) as a compare-and-set on
   * (status `unknown`, `version`), only when no live lease is held; bumps the version and counts the
   * lookup (`lookup_count + 1`) in the same statement: the lookup is recorded as started, durably,
   * before the adapter runs, so a lookup that never ends (the process died) still counts against
   * the bound. Returns the lookup count the lease stored (this lookup included) when taken, undefined
   * when not (nothing written). The count is read from the statement itself, not derived from the
   * caller's row: giving a lease back uncounted changes the count without moving the version.
   */
  async acquireLease(
    tx: StoreTx,
    effectId: string,
    version: number,
    owner: string,
    nowMs: number,
    expiresAtMs: number,
  ): Promise<number | undefined> {
    const q = tx.prepared("reconciliation.acquireLease", (db) => {
      const externalToolEffects = tx.tables.externalToolEffects;
      return db
        .update(externalToolEffects)
        .set({
          ...placeholdersFor(["leaseOwner", "leaseExpiresAtMs"]),
          lookupCount: sql`${externalToolEffects.lookupCount} + 1`,
          version: sql`${externalToolEffects.version} + 1`,
        })
        .where(
          and(
            eq(externalToolEffects.id, sql.placeholder("effectId")),
            eq(externalToolEffects.status, "unknown"),
            eq(externalToolEffects.version, sql.placeholder("version")),
            or(isNull(externalToolEffects.leaseOwner), lt(externalToolEffects.leaseExpiresAtMs, sql.placeholder("nowMs"))),
          ),
        )
        .returning({ lookupCount: externalToolEffects.lookupCount })
        .prepare();
    });
    const rows = await q.execute({ effectId, version, nowMs, leaseOwner: owner, leaseExpiresAtMs: expiresAtMs });
    return rows[0]?.lookupCount;
  },
  /**
   * {@link acquireLease} that only takes over `expiredOwner`'s lease, EXPIRED at `nowMs` (`lease_expires_at_ms
   * < nowMs`): compare-and-set on (status `unknown`, `version`, `lease_owner` = `expiredOwner`). Returns the
   * lookup count the lease stored when taken: the lookup that lease counted died without an outcome (the
   * caller records it). Undefined (nothing written) when the effect changed, or that lease was given back meanwhile (a give-back does not move
   * the version, so {@link acquireLease} may still take the effect as a fresh lease).
   */
  async takeOverExpiredLease(
    tx: StoreTx,
    effectId: string,
    version: number,
    expiredOwner: string,
    owner: string,
    nowMs: number,
    expiresAtMs: number,
  ): Promise<number | undefined> {
    const externalToolEffects = tx.tables.externalToolEffects;
    const rows = await tx.db
      .update(externalToolEffects)
      .set({
        leaseOwner: owner,
        leaseExpiresAtMs: expiresAtMs,
        lookupCount: sql`${externalToolEffects.lookupCount} + 1`,
        version: sql`${externalToolEffects.version} + 1`,
      })
      .where(
        and(
          eq(externalToolEffects.id, effectId),
          eq(externalToolEffects.status, "unknown"),
          eq(externalToolEffects.version, version),
          eq(externalToolEffects.leaseOwner, expiredOwner),
          lt(externalToolEffects.leaseExpiresAtMs, nowMs),
        ),
      )
      .returning({ lookupCount: externalToolEffects.lookupCount });
    return rows[0]?.lookupCount;
  },
  /**
   * {@link acquireLease} for several effects in ONE statement, each row its own compare-and-set on
   * (status `unknown`, its `version`, no live lease at `nowMs`), all under the one `owner` token until
   * `expiresAtMs` (ms); each lease taken counts its lookup and bumps the version. Returns the effects
   * leased, by id, with the lookup count each lease stored (the others changed since they were read, or
   * another reconciler holds them).
   */
  async acquireLeases(
    tx: StoreTx,
    effects: ReadonlyArray<{ effectId: string; version: number }>,
    owner: string,
    nowMs: number,
    expiresAtMs: number,
  ): Promise<Map<string, number>> {
    if (effects.length === 0) return new Map();
    if (effects.length === 1) {
      const [one] = effects;
      const count = await reconciliationRepository.acquireLease(tx, one!.effectId, one!.version, owner, nowMs, expiresAtMs);
      return new Map(count === undefined ? [] : [[one!.effectId, count]]);
    }
    // One prepared query per batch size (at most a sweep page, twice the lookup concurrency: a bounded set), so a
    // batch's statement is not built again for every lease transaction.
    const n = effects.length;
    const q = tx.prepared(`reconciliation.acquireLeases:${n}`, (db) => {
      const externalToolEffects = tx.tables.externalToolEffects;
      const ids = Array.from({ length: n }, (_, i) => sql.placeholder(`id${i}`));
      return db
        .update(externalToolEffects)
        .set({
          ...placeholdersFor(["leaseOwner", "leaseExpiresAtMs"]),
          lookupCount: sql`${externalToolEffects.lookupCount} + 1`,
          version: sql`${externalToolEffects.version} + 1`,
        })
        .where(
          and(
            inArray(externalToolEffects.id, ids),
            or(...ids.map((id, i) => and(eq(externalToolEffects.id, id), eq(externalToolEffects.version, sql.placeholder(`version${i}`))))),
            eq(externalToolEffects.status, "unknown"),
            or(isNull(externalToolEffects.leaseOwner), lt(externalToolEffects.leaseExpiresAtMs, sql.placeholder("nowMs"))),
          ),
        )
        .returning({ id: externalToolEffects.id, lookupCount: externalToolEffects.lookupCount })
        .prepare();
    });
    const values: Record<string, unknown> = { leaseOwner: owner, leaseExpiresAtMs: expiresAtMs, nowMs };
    effects.forEach((e, i) => {
      values[`id${i}`] = e.effectId;
      values[`version${i}`] = e.version;
    });
    const rows = await q.execute(values);
    return new Map(rows.map((r) => [r.id, r.lookupCount]));
  },
  /**
   * Writes the outcome of a lookup as a compare-and-set on (status `unknown`, `version`, lease
   * `owner`): sets `set`, releases the lease and bumps the version (the lookup was counted when the
   * lease was taken). `current` is the row the compare-and-set requires (status `unknown`, `version`,
   * lease held by `owner`, its lookup count as the lease statement returned it): every write to an effect
   * other than a lease give-back bumps its version, and a give-back clears the owner, so a row that passes
   * it is that row, and the row as written is built from it and `set` (nothing is read back). Returns that row;
   * undefined means another reconciler or an operator got there first (record `superseded`).
   */
  async commitOutcome(
    tx: StoreTx,
    current: typeof externalToolEffects.$inferSelect,
    version: number,
    owner: string,
    set: Partial<typeof externalToolEffects.$inferInsert>,
  ): Promise<typeof externalToolEffects.$inferSelect | undefined> {
    const effectId = current.id;
    // One prepared statement per shape of `set` (the columns an outcome writes; a handful of shapes).
    const columns = shapeOf(set) as Array<keyof typeof set>;
    const won = tx.sqliteStatement
      ? sqliteOutcomeWriteRepository.commitOutcome(tx.sqliteStatement, tx.tables, effectId, version, owner, set, columns)
      : await commitOutcomeDrizzle(tx, effectId, version, owner, set, columns);
    if (!won) return undefined;
    const written: Record<string, unknown> = { ...current, leaseOwner: null, leaseExpiresAtMs: null, version: version + 1 };
    for (const c of columns) written[c] = set[c];
    return written as typeof externalToolEffects.$inferSelect;
  },
  /**
   * Releases `owner`'s lease without an outcome (the outcome's compare-and-set was lost, or its
   * transaction failed). With `uncount` (no adapter call was made under this lease — the reconcile
   * step refused its input, a batch lease was never used — or the outcome's transaction rolled back,
   * leaving the effect as it was) the lookup counted by {@link acquireLease} is taken back. Changes only the lease columns and the count (not the
   * version: nothing about the effect changed). True when this owner still held it.
   */
  async releaseLease(tx: StoreTx, effectId: string, owner: string, uncount = false): Promise<boolean> {
    const q = tx.prepared(`reconciliation.releaseLease:${uncount ? "uncount" : "keep"}`, (db) => {
      const externalToolEffects = tx.tables.externalToolEffects;
      const count = externalToolEffects.lookupCount;
      return db
        .update(externalToolEffects)
        .set({
          leaseOwner: null,
          leaseExpiresAtMs: null,
          // CASE, not SQLite's scalar max(a, b): both dialects accept it
          ...(uncount ? { lookupCount: sql`CASE WHEN ${count} > 0 THEN ${count} - 1 ELSE 0 END` } : {}),
        })
        .where(and(eq(externalToolEffects.id, sql.placeholder("effectId")), eq(externalToolEffects.leaseOwner, sql.placeholder("owner"))))
        .returning({ id: externalToolEffects.id })
        .prepare();
    });
    const rows = await q.execute({ effectId, owner });
    return rows.length > 0;
  },
  /**
   * Releases `owner`'s lease on the effect if it is still held and EXPIRED at `nowMs` (`lease_expires_at_ms
   * < nowMs`, the same rule by which {@link acquireLease} takes a lease over). A live lease (another API
   * instance is looking the effect up) is never touched. True when released.
   */
  async releaseExpiredLease(tx: StoreTx, effectId: string, owner: string, nowMs: number): Promise<boolean> {
    const externalToolEffects = tx.tables.externalToolEffects;
    const rows = await tx.db
      .update(externalToolEffects)
      .set({ leaseOwner: null, leaseExpiresAtMs: null })
      .where(
        and(
          eq(externalToolEffects.id, effectId),
          eq(externalToolEffects.leaseOwner, owner),
          lt(externalToolEffects.leaseExpiresAtMs, nowMs),
        ),
      )
      .returning({ id: externalToolEffects.id });
    return rows.length > 0;
  },
  /**
   * The `unknown` effects whose lease EXPIRED at `nowMs` without an outcome (the lookup's process died or
   * stalled past the lease), at most `limit`, oldest first. Live leases are not listed.
   */
  async listExpiredLeases(tx: StoreTx, nowMs: number, limit: number): Promise<Array<typeof externalToolEffects.$inferSelect>> {
    const externalToolEffects = tx.tables.externalToolEffects;
    return tx.db
      .select()
      .from(externalToolEffects)
      .where(
        and(
          // leases are taken on `unknown` effects only (acquireLease): the (status, id) index serves this
          eq(externalToolEffects.status, "unknown"),
          isNotNull(externalToolEffects.leaseOwner),
          lt(externalToolEffects.leaseExpiresAtMs, nowMs),
        ),
      )
      .orderBy(asc(externalToolEffects.id))
      .limit(limit);
  },
  /** Inserts one reconciliation record (a second confirmed record for an effect violates a partial unique index). */
  async insertRecord(tx: StoreTx, row: typeof effectReconciliations.$inferInsert): Promise<void> {
    if (tx.sqliteStatement) return sqliteOutcomeWriteRepository.insertRecord(tx.sqliteStatement, tx.tables, row);
    const shape = shapeOf(row);
    const q = tx.prepared(`reconciliation.insertRecord:${shape.join(",")}`, (db) =>
      db
        .insert(tx.tables.effectReconciliations)
        .values(placeholdersFor(shape) as unknown as typeof effectReconciliations.$inferInsert)
        .prepare(),
    );
    await q.execute(argumentsFor(shape, row));
  },
  /** The distinct tool names the store holds effects of, for each of `serverIds` (the startup report). */
  async toolsSeenOn(tx: StoreTx, serverIds: readonly string[]): Promise<Array<{ serverId: string; toolName: string }>> {
    if (serverIds.length === 0) return [];
    const externalToolEffects = tx.tables.externalToolEffects;
    return tx.db
      .selectDistinct({ serverId: externalToolEffects.serverId, toolName: externalToolEffects.toolName })
      .from(externalToolEffects)
      .where(inArray(externalToolEffects.serverId, [...serverIds]));
  },
  /** The reconciliation records of an effect, oldest first. */
  async listRecords(tx: StoreTx, effectId: string): Promise<ReconciliationRow[]> {
    const effectReconciliations = tx.tables.effectReconciliations;
    return tx.db
      .select()
      .from(effectReconciliations)
      .where(eq(effectReconciliations.effectId, effectId))
      .orderBy(asc(effectReconciliations.id));
  },
  /** The reconciliation records of every effect of run `runId`, oldest first, in one statement (the run view groups them by effect). */
  async listRecordsOfRun(tx: StoreTx, runId: string): Promise<ReconciliationRow[]> {
    const effectReconciliations = tx.tables.effectReconciliations;
    const externalToolEffects = tx.tables.externalToolEffects;
    return tx.db
      .select()
      .from(effectReconciliations)
      .where(
        inArray(
          effectReconciliations.effectId,
          tx.db.select({ id: externalToolEffects.id }).from(externalToolEffects).where(eq(externalToolEffects.runId, runId)),
        ),
      )
      .orderBy(asc(effectReconciliations.id));
  },
  /**
   * `unknown` effects of the `eligible` (server, tools) pairs whose next lookup is due at `nowMs`
   * and that wait for no operator, oldest first, at most `limit`,
   * and only those with an id after `afterId` when given (keyset pagination: a caller pages through
   * every due effect with `afterId` = the last id of the previous page, holding one page at a time).
   * Effects no adapter can look up are excluded in SQL, so they can never crowd out due ones. An
   * effect with no next lookup and no operator attention is due whatever its lookup count: never
   * looked up, or its last lease was given back without an outcome after it had taken over the
   * expired lease of a lookup that died (counted, never scheduled); every outcome sets one or the other.
   * With `opts.skipLocked` (PostgreSQL only; call it inside the write transaction that leases the
   * rows) the rows are locked `FOR UPDATE SKIP LOCKED`: rows another transaction holds (another API
   * instance leasing them right now) are skipped rather than read, waited for and lost.
   */
  async listDue(
    tx: StoreTx,
    nowMs: number,
    limit: number,
    eligible: ReadonlyArray<{ serverId: string; tools: readonly string[] }>,
    afterId?: string,
    opts: { skipLocked?: boolean } = {},
  ): Promise<Array<typeof externalToolEffects.$inferSelect>> {
    if (eligible.length === 0) return [];
    if (!opts.skipLocked) return await listDuePrepared(tx, nowMs, limit, eligible, afterId);
    const externalToolEffects = tx.tables.externalToolEffects;
    const bound = or(
      ...eligible.map((e) => and(eq(externalToolEffects.serverId, e.serverId), inArray(externalToolEffects.toolName, [...e.tools]))),
    );
    const query = tx.db
      .select()
      .from(externalToolEffects)
      .where(
        and(
          eq(externalToolEffects.status, "unknown"),
          afterId === undefined ? undefined : gt(externalToolEffects.id, afterId),
          bound,
          isNull(externalToolEffects.operatorAttention),
          or(lte(externalToolEffects.nextLookupAtMs, nowMs), isNull(externalToolEffects.nextLookupAtMs)),
          or(isNull(externalToolEffects.leaseOwner), lt(externalToolEffects.leaseExpiresAtMs, nowMs)),
        ),
      )
      .orderBy(asc(externalToolEffects.id))
      .limit(limit);
    // The PostgreSQL store's builder is drizzle's node-postgres one (typed as SQLite's, see store.port.ts): its select has `.for()`.
    if (opts.skipLocked)
      return (query as unknown as LockableSelect<typeof externalToolEffects.$inferSelect>).for("update", { skipLocked: true });
    return query;
  },
};

/**
 * `listDue` without row locks as ONE prepared query per shape of `eligible` (how many servers, and
 * how many tools each: fixed for a sweep pass), cached by the store, so a pass's pages are not built
 * again by drizzle for every lease batch. No `afterId` reads from the start (`id > ''`: every ULID
 * is greater).
 */
async function listDuePrepared(
  tx: StoreTx,
  nowMs: number,
  limit: number,
  eligible: ReadonlyArray<{ serverId: string; tools: readonly string[] }>,
  afterId: string | undefined,
): Promise<Array<typeof externalToolEffects.$inferSelect>> {
  const shape = eligible.map((e) => e.tools.length).join(",");
  const q = tx.prepared(`reconciliation.listDue:${shape}`, (db) => {
    const t = tx.tables.externalToolEffects;
    const tools = (e: { tools: readonly string[] }, i: number) => e.tools.map((_, j) => sql.placeholder(`tool${i}_${j}`));
    const bound = or(...eligible.map((e, i) => and(eq(t.serverId, sql.placeholder(`server${i}`)), inArray(t.toolName, tools(e, i)))));
    const now = sql.placeholder("nowMs");
    const due = [eq(t.status, "unknown"), gt(t.id, sql.placeholder("afterId")), bound, isNull(t.operatorAttention)];
    const free = [or(lte(t.nextLookupAtMs, now), isNull(t.nextLookupAtMs)), or(isNull(t.leaseOwner), lt(t.leaseExpiresAtMs, now))];
    return db
      .select()
      .from(t)
      .where(and(...due, ...free))
      .orderBy(asc(t.id))
      .limit(sql.placeholder("limit"))
      .prepare();
  });
  const values: Record<string, unknown> = { afterId: afterId ?? "", nowMs, limit };
  eligible.forEach((e, i) => {
    values[`server${i}`] = e.serverId;
    e.tools.forEach((tool, j) => (values[`tool${i}_${j}`] = tool));
  });
  return await q.execute(values);
}

/** The row-locking clause of drizzle's PostgreSQL select (`SELECT … FOR UPDATE SKIP LOCKED`), absent from the SQLite builder's type. */
interface LockableSelect<Row> {
  for(strength: "update", config: { skipLocked: true }): Promise<Row[]>;
}

/** `reconciliationRepository.commitOutcome`'s compare-and-set as a drizzle prepared query (PostgreSQL, and any store without raw statements): true when won. */
async function commitOutcomeDrizzle(
  tx: StoreTx,
  effectId: string,
  version: number,
  owner: string,
  set: Partial<typeof externalToolEffects.$inferInsert>,
  columns: ReadonlyArray<keyof Partial<typeof externalToolEffects.$inferInsert>>,
): Promise<boolean> {
  const externalToolEffects = tx.tables.externalToolEffects;
  const query = tx.prepared(`reconciliation.commitOutcome:${columns.join(",")}`, (h) =>
    h
      .update(externalToolEffects)
      .set({
        ...placeholdersFor(columns, "set_"),
        leaseOwner: null,
        leaseExpiresAtMs: null,
        version: sql`${externalToolEffects.version} + 1`,
      })
      .where(
        and(
          eq(externalToolEffects.id, sql.placeholder("effectId")),
          eq(externalToolEffects.status, "unknown"),
          eq(externalToolEffects.version, sql.placeholder("version")),
          eq(externalToolEffects.leaseOwner, sql.placeholder("owner")),
        ),
      )
      .returning({ id: externalToolEffects.id })
      .prepare(),
  );
  const values: Record<string, unknown> = { effectId, version, owner };
  for (const c of columns) values[`set_${c}`] = set[c];
  return (await query.execute(values)).length > 0;
}
