// A lookup's outcome on PostgreSQL in one round trip (the effect's compare-and-set, its record, its run event), and a batch's give-backs in one.
import { newUlid } from "@mosoo/contracts";
import type { effectReconciliations, externalToolEffects } from "../../../platform/db/sqlite/sqlite-schema.js";
import type { StoreTx } from "../../../platform/db/store.port.js";

type EffectRow = typeof externalToolEffects.$inferSelect;
type EffectSet = Partial<typeof externalToolEffects.$inferInsert>;
type RecordRow = typeof effectReconciliations.$inferInsert;

/**
 * One outcome to write ({@link pgOutcomeWriteRepository.commit}): the compare-and-set (`current`: the row
 * as its lease left it, `version` the leased version, `owner` the lease token, `set` the outcome's columns),
 * the reconciliation record without `nextLookupAtMs` (taken from the row as written), and the run event
 * `effect.reconciled` (`payload` built from the row as written, `nowMs`: ms since the epoch).
 */
export interface PgOutcomeWrite {
  current: EffectRow;
  version: number;
  owner: string;
  set: EffectSet;
  record: Omit<RecordRow, "nextLookupAtMs">;
  payload: (written: EffectRow) => Record<string, unknown>;
  nowMs: number;
}

/** The record's columns, in the order the statement inserts them, with the type each parameter is cast to. */
const RECORD_COLUMNS: ReadonlyArray<readonly [keyof RecordRow, string, "text" | "bigint"]> = [
  ["id", "id", "text"],
  ["effectId", "effect_id", "text"],
  ["adapterId", "adapter_id", "text"],
  ["adapterVersion", "adapter_version", "text"],
  ["adapterPackage", "adapter_package", "text"],
  ["adapterPackageVersion", "adapter_package_version", "text"],
  ["adapterDeclarationHash", "adapter_declaration_hash", "text"],
  ["trigger", "trigger", "text"],
  ["outcome", "outcome", "text"],
  ["reasonCode", "reason_code", "text"],
  ["receiptJson", "receipt_json", "text"],
  ["resultJson", "result_json", "text"],
  ["error", "error", "text"],
  ["startedAtMs", "started_at_ms", "bigint"],
  ["finishedAtMs", "finished_at_ms", "bigint"],
  ["nextLookupAtMs", "next_lookup_at_ms", "bigint"],
];

/** The statement of each shape of `set` (its sorted column names), with its prepared-statement name; a handful of shapes. */
const statements = new Map<string, { name: string; text: string }>();

/**
 * The statement for the `set` columns `columns` (sorted `externalToolEffects` keys). Parameters: $1 effect
 * id, $2 leased version, $3 lease owner, $4 run id, $5 event id, $6 event payload, $7 now (ms), then the
 * record's columns ({@link RECORD_COLUMNS}), then the set's. Every parameter of the two conditional
 * `INSERT … SELECT … FROM` is cast: PostgreSQL does not infer a type from the target column there.
 */
function statementFor(tx: StoreTx, columns: readonly string[]): { name: string; text: string } {
  const key = columns.join(",");
  const known = statements.get(key);
  if (known) return known;
  const effects = tx.tables.externalToolEffects as unknown as Record<string, { name: string }>;
  const recordParams = RECORD_COLUMNS.map(([, , type], i) => `$${8 + i}::${type}`).join(", ");
  const setParams = columns.map((c, i) => `"${effects[c]!.name}" = $${8 + RECORD_COLUMNS.length + i}`);
  const text = `WITH upd AS (
  UPDATE "external_tool_effects"
  SET ${[...setParams, `"lease_owner" = NULL`, `"lease_expires_at_ms" = NULL`, `"version" = "version" + 1`].join(", ")}
  WHERE "id" = $1::text AND "status" = 'unknown' AND "version" = $2::integer AND "lease_owner" = $3::text
  RETURNING "id"
), rec AS (
  INSERT INTO "effect_reconciliations" (${RECORD_COLUMNS.map(([, col]) => `"${col}"`).join(", ")})
  SELECT ${recordParams} FROM upd
), bumped AS (
  UPDATE "session_runs" SET "last_event_seq" = "last_event_seq" + 1
  WHERE "id" = $4::text AND EXISTS (SELECT 1 FROM upd)
  RETURNING "last_event_seq"
), ev AS (
  INSERT INTO "run_events" ("id", "run_id", "seq", "type", "terminal", "payload_json", "created_at_ms")
  SELECT $5::text, $4::text, bumped."last_event_seq", 'effect.reconciled', false, $6::text, $7::bigint FROM bumped
)
SELECT EXISTS (SELECT 1 FROM upd) AS "won", (SELECT "last_event_seq" FROM bumped) AS "seq"`;
  const statement = { name: `mosoo_reconciliation_outcome_${statements.size}`, text };
  statements.set(key, statement);
  return statement;
}

/** {@link pgOutcomeWriteRepository.releaseLeases}: every give-back of a batch in one statement (unnest of the ids and owners). */
const RELEASE_LEASES = {
  name: "mosoo_reconciliation_release_leases",
  text: `UPDATE "external_tool_effects" AS e
  SET "lease_owner" = NULL, "lease_expires_at_ms" = NULL,
    "lookup_count" = CASE WHEN e."lookup_count" > 0 THEN e."lookup_count" - 1 ELSE 0 END
  FROM unnest($1::text[], $2::text[]) AS g("id", "owner")
  WHERE e."id" = g."id" AND e."lease_owner" = g."owner"
  RETURNING e."id"`,
} as const;

/** The PostgreSQL outcome write (docs/DESIGN.md §3 rules 5–7): one data-modifying `WITH`, all of it or nothing. */
export const pgOutcomeWriteRepository = {
  /**
   * On a PostgreSQL store (`tx.pgPrepared`), in ONE round trip of the caller's transaction: the outcome's
   * compare-and-set on (status `unknown`, `version`, lease `owner`) setting `set`, releasing the lease and
   * bumping the version, and only when it matched: the reconciliation record and the run's `effect.reconciled`
   * event at the run's next `seq` (the run's `last_event_seq` bumped, a row lock taken after the effect's, as
   * before). Returns the effect as written (built from `current` and `set`, nothing read back), or undefined
   * when the compare-and-set was lost (nothing written: record `superseded`).
   * @throws Error when called on a SQLite store, when the run is gone (the transaction rolls back), and the
   *   store's constraint error (e.g. a second confirmed record for the effect).
   */
  async commit(tx: StoreTx, w: PgOutcomeWrite): Promise<EffectRow | undefined> {
    if (!tx.pgPrepared) throw new Error("pgOutcomeWriteRepository.commit runs on a PostgreSQL store only");
    const columns = (Object.keys(w.set) as Array<keyof EffectSet>).filter((k) => w.set[k] !== undefined).sort();
    const written = { ...w.current, leaseOwner: null, leaseExpiresAtMs: null, version: w.version + 1 } as Record<string, unknown>;
    for (const c of columns) written[c] = w.set[c];
    const row = written as EffectRow;
    const record: RecordRow = { ...w.record, nextLookupAtMs: row.nextLookupAtMs };
    const values: unknown[] = [
      w.current.id,
      w.version,
      w.owner,
      w.current.runId,
      newUlid(w.nowMs),
      JSON.stringify(w.payload(row)),
      w.nowMs,
    ];
    for (const [key] of RECORD_COLUMNS) values.push(record[key] ?? null);
    for (const c of columns) values.push(w.set[c]);
    const { name, text } = statementFor(tx, columns);
    const [result] = await tx.pgPrepared(name, text, values);
    if (!result?.won) return undefined;
    if (result.seq === null || result.seq === undefined) throw new Error(`no run ${w.current.runId} to append an event to`);
    return row;
  },
  /**
   * PostgreSQL (`tx.pgPrepared`): gives back, in ONE statement, the leases `leases` (effect id, owner) that
   * will not be used, each only while that owner still holds it, and takes back the lookup each counted
   * (`reconciliationRepository.releaseLease` with `uncount`, for every lease at once; the version is not
   * moved). Returns how many were still held.
   * @throws Error when called on a SQLite store, and any database error.
   */
  async releaseLeases(tx: StoreTx, leases: ReadonlyArray<{ effectId: string; owner: string }>): Promise<number> {
    if (!tx.pgPrepared) throw new Error("pgOutcomeWriteRepository.releaseLeases runs on a PostgreSQL store only");
    if (leases.length === 0) return 0;
    const values = [leases.map((l) => l.effectId), leases.map((l) => l.owner)];
    return (await tx.pgPrepared(RELEASE_LEASES.name, RELEASE_LEASES.text, values)).length;
  },
};
