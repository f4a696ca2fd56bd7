// A lookup's outcome writes on SQLite (the effect's compare-and-set, its reconciliation record) as raw compiled statements.
import type { effectReconciliations, externalToolEffects } from "../../../platform/db/sqlite/sqlite-schema.js";
import type { SqliteStatement, StoreTables } from "../../../platform/db/store.port.js";
import { driverColumns, shapeOf } from "../../../platform/db/prepared-shapes.js";

type EffectSet = Partial<typeof externalToolEffects.$inferInsert>;
type RecordRow = typeof effectReconciliations.$inferInsert;
/** `StoreTx.sqliteStatement` of a SQLite unit of work. */
type Statements = (text: string) => SqliteStatement;

/** A statement's text and how to turn a caller's object into its parameters, for one shape (sorted column keys). */
interface Shaped {
  text: string;
  values: (values: object) => unknown[];
}

/** Per shape of `set`; a handful of shapes (one per kind of outcome). */
const outcomeStatements = new Map<string, Shaped>();
/** Per shape of a record row; a handful of shapes. */
const recordStatements = new Map<string, Shaped>();

function shaped(cache: Map<string, Shaped>, keys: readonly string[], table: object, build: (names: string[]) => string): Shaped {
  const key = keys.join(",");
  let known = cache.get(key);
  if (known === undefined) {
    const columns = driverColumns(table, keys);
    known = { text: build(columns.names), values: columns.values };
    cache.set(key, known);
  }
  return known;
}

/**
 * The outcome path's writes on SQLite through `StoreTx.sqliteStatement` (one compiled statement per shape, no
 * drizzle placeholder filling or row mapping per outcome): the same statements, rules and effect as the drizzle
 * ones in `reconciliationRepository` (`commitOutcome`, `insertRecord`), which stay the PostgreSQL path.
 */
export const sqliteOutcomeWriteRepository = {
  /**
   * The outcome's compare-and-set (see `reconciliationRepository.commitOutcome`): sets the `columns` of `set`
   * (its keys with a value, sorted), releases the lease and bumps the version, only while the effect is
   * `unknown` at the leased `version` under `owner`'s lease. True when the row was written; false when the
   * compare-and-set was lost (nothing written). Throws the driver's error.
   */
  commitOutcome(
    statements: Statements,
    tables: StoreTables,
    effectId: string,
    version: number,
    owner: string,
    set: EffectSet,
    columns: readonly string[],
  ): boolean {
    const s = shaped(outcomeStatements, columns, tables.externalToolEffects, (names) => {
      const assignments = [
        ...names.map((n) => `${n} = ?`),
        `"lease_owner" = NULL`,
        `"lease_expires_at_ms" = NULL`,
        `"version" = "version" + 1`,
      ];
      return `UPDATE "external_tool_effects" SET ${assignments.join(", ")} WHERE "id" = ? AND "status" = 'unknown' AND "version" = ? AND "lease_owner" = ?`;
    });
    return statements(s.text).run(...s.values(set), effectId, version, owner).changes === 1;
  },
  /**
   * Inserts one reconciliation record (see `reconciliationRepository.insertRecord`); a second confirmed record
   * for an effect violates a partial unique index and throws the driver's constraint error.
   */
  insertRecord(statements: Statements, tables: StoreTables, row: RecordRow): void {
    const s = shaped(recordStatements, shapeOf(row), tables.effectReconciliations, (names) => {
      return `INSERT INTO "effect_reconciliations" (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`;
    });
    statements(s.text).run(...s.values(row));
  },
};
