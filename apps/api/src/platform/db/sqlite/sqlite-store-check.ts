// The operator's whole-file check of a SQLite store (`npm run store:check`): integrity, and every foreign key with the row that breaks it.
import Database from "better-sqlite3";
import { STARTUP_BUSY_TIMEOUT_MS } from "../store-busy.js";

/** The file is a SQLite database without the Mosoo tables (`__drizzle_migrations`, `external_tool_effects`); code `store.not_mosoo`. */
export class StoreNotMosooError extends Error {
  override readonly name = "StoreNotMosooError";
  readonly code = "store.not_mosoo";
  constructor(file: string) {
    super(`store.not_mosoo: ${file} holds no Mosoo store (no Mosoo tables); pass the API's own MOSOO_DB_FILE`);
  }
}

/** At most this many foreign-key violations are reported (the first ones `PRAGMA foreign_key_check` finds). */
const MAX_VIOLATIONS = 100;

/**
 * A column value of a row's primary key as SQLite returns it (text, integer, real, blob or NULL).
 * `bigint` never occurs: the check's connection does not turn on better-sqlite3's safe integers.
 */
type KeyValue = string | number | Buffer | null;

/**
 * One row whose foreign key names no parent row. `rowid` is SQLite's rowid (null for a `WITHOUT ROWID`
 * table: `run_events`, `external_tool_effect_attempts`); `primaryKey` names the row by its primary key's
 * columns, in the key's order (`{ effect_id: "01J…", attempt: 2 }`), for a `WITHOUT ROWID` table; null
 * for a rowid table (its `rowid` names it) or when the lookup found no such row.
 */
export interface ForeignKeyViolation {
  table: string;
  rowid: number | null;
  primaryKey: Record<string, KeyValue> | null;
  /** The table the broken foreign key references. */
  parent: string;
}

/** What {@link checkSqliteStore} found: SQLite's `integrity_check` lines other than `ok`, and the foreign-key violations. */
export interface SqliteStoreCheck {
  /** Problems `PRAGMA integrity_check` reported (empty: the file is sound). */
  integrityProblems: string[];
  /** Rows whose foreign key names no parent (`PRAGMA foreign_key_check`), at most the first 100. */
  foreignKeyViolations: ForeignKeyViolation[];
}

/** A row of `PRAGMA foreign_key_check`: the child table, its rowid (null without rowid), the parent table, the foreign key's id. */
interface ForeignKeyCheckRow {
  table: string;
  rowid: number | null;
  parent: string;
  fkid: number;
}

/** `name` as a quoted SQL identifier (the names come from the schema itself; quoting keeps any of them valid SQL). */
const ident = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** The primary-key columns of `table`, in the key's order (`PRAGMA table_info`'s `pk` 1, 2, ...). */
function primaryKeyColumns(sqlite: Database.Database, table: string): string[] {
  const info = sqlite.pragma(`table_info(${ident(table)})`) as Array<{ name: string; pk: number }>;
  return info
    .filter((c) => c.pk > 0)
    .sort((a, b) => a.pk - b.pk)
    .map((c) => c.name);
}

/**
 * The primary keys of the first `limit` rows of `table` (in primary-key order, the order `PRAGMA
 * foreign_key_check` scans a `WITHOUT ROWID` table in) whose foreign key `fkid` names no row of
 * `parent`: the foreign key's columns from `PRAGMA foreign_key_list` (a row with any of them NULL
 * breaks nothing, as in SQLite's own check; a key that names no parent columns references the
 * parent's primary key). Every row, when the parent table does not exist.
 */
function orphanKeys(
  sqlite: Database.Database,
  table: string,
  parent: string,
  fkid: number,
  limit: number,
): Array<Record<string, KeyValue>> {
  const key = primaryKeyColumns(sqlite, table);
  const fk = (sqlite.pragma(`foreign_key_list(${ident(table)})`) as Array<{ id: number; seq: number; from: string; to: string | null }>)
    .filter((r) => r.id === fkid)
    .sort((a, b) => a.seq - b.seq);
  if (key.length === 0 || fk.length === 0) return [];
  const parentExists = sqlite.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(parent) !== undefined;
  const parentKey = fk.some((r) => r.to === null) && parentExists ? primaryKeyColumns(sqlite, parent) : [];
  const present = fk.map((r) => `c.${ident(r.from)} IS NOT NULL`);
  const match = fk.map((r, i) => `p.${ident(r.to ?? parentKey[i] ?? "rowid")} = c.${ident(r.from)}`);
  const missing = parentExists ? [`NOT EXISTS (SELECT 1 FROM ${ident(parent)} AS p WHERE ${match.join(" AND ")})`] : [];
  const sql =
    `SELECT ${key.map((k) => `c.${ident(k)}`).join(", ")} FROM ${ident(table)} AS c ` +
    `WHERE ${[...present, ...missing].join(" AND ")} ORDER BY ${key.map((k) => `c.${ident(k)}`).join(", ")} LIMIT ?`;
  return sqlite.prepare(sql).all(limit) as Array<Record<string, KeyValue>>;
}

/**
 * The violations of `rows` (the first {@link MAX_VIOLATIONS} of `PRAGMA foreign_key_check`), each row of a
 * `WITHOUT ROWID` table named by its primary key: SQLite gives such a row no rowid, so the rows of each
 * (table, foreign key) are looked up with {@link orphanKeys} and matched to the check's rows in order.
 */
function withPrimaryKeys(sqlite: Database.Database, rows: ForeignKeyCheckRow[]): ForeignKeyViolation[] {
  const keys = new Map<string, Array<Record<string, KeyValue>>>();
  const taken = new Map<string, number>();
  return rows.map(({ table, rowid, parent, fkid }) => {
    if (rowid !== null) return { table, rowid, primaryKey: null, parent };
    const group = `${table}\u0000${fkid}`;
    if (!keys.has(group)) {
      const count = rows.filter((r) => r.rowid === null && r.table === table && r.fkid === fkid).length;
      keys.set(group, orphanKeys(sqlite, table, parent, fkid, count));
    }
    const index = taken.get(group) ?? 0;
    taken.set(group, index + 1);
    return { table, rowid, primaryKey: keys.get(group)![index] ?? null, parent };
  });
}

/**
 * Checks a whole SQLite store file, read-only: `PRAGMA integrity_check` (pages, indexes, CHECK and NOT NULL
 * constraints) and `PRAGMA foreign_key_check`, each violating row named by its rowid or, in a `WITHOUT ROWID`
 * table, by its primary key. Reads every page: seconds per million effects, so an operator runs it
 * (`npm run store:check`), not every start.
 * @throws Error when the file cannot be opened (better-sqlite3's `SQLITE_CANTOPEN`, `SQLITE_NOTADB`);
 *   {@link StoreNotMosooError} (`store.not_mosoo`) when it is a SQLite file without the Mosoo tables (an empty file
 *   is one): nothing of it is called sound.
 */
export function checkSqliteStore(file: string): SqliteStoreCheck {
  const sqlite = new Database(file, { readonly: true, fileMustExist: true });
  try {
    sqlite.pragma(`busy_timeout = ${STARTUP_BUSY_TIMEOUT_MS}`);
    const mosoo = sqlite
      .prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('__drizzle_migrations', 'external_tool_effects')")
      .pluck()
      .get() as number;
    if (mosoo !== 2) throw new StoreNotMosooError(file);
    const integrity = (sqlite.pragma("integrity_check") as Array<{ integrity_check: string }>).map((r) => r.integrity_check);
    const fk = sqlite.pragma("foreign_key_check") as ForeignKeyCheckRow[];
    return {
      integrityProblems: integrity.filter((line) => line !== "ok"),
      foreignKeyViolations: withPrimaryKeys(sqlite, fk.slice(0, MAX_VIOLATIONS)),
    };
  } finally {
    sqlite.close();
  }
}

/** A text key value quoted as SQL (`'it''s'`), each control character (newline, ESC, …) written as `\uXXXX` so one problem stays one line and no terminal sequence is printed. */
function quotedText(x: string): string {
  // C0 controls, DEL, C1 controls, and the Unicode line and paragraph separators
  const escaped = x.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  return `'${escaped.replace(/'/g, "''")}'`;
}

/**
 * How `store:check` names a violating row: `row <rowid>`, or `row (<column>=<value>, ...)` by its primary
 * key (text quoted as SQL, control characters as `\uXXXX`: `(effect_id='01J…', attempt=2)`), or `row ?` when
 * neither is known.
 */
export function describeViolatingRow(v: ForeignKeyViolation): string {
  if (v.rowid !== null) return `row ${v.rowid}`;
  if (v.primaryKey === null) return "row ?";
  const value = (x: KeyValue): string =>
    x === null ? "NULL" : typeof x === "string" ? quotedText(x) : Buffer.isBuffer(x) ? `x'${x.toString("hex")}'` : String(x);
  return `row (${Object.entries(v.primaryKey)
    .map(([k, x]) => `${k}=${value(x)}`)
    .join(", ")})`;
}
