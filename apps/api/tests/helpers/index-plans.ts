/**
 * Index justification: `EXPLAIN QUERY PLAN` of every captured statement (see
 * `sql-capture.ts`), plus the lookups SQLite makes itself for each foreign key of a table the
 * workload deletes from; which index each plan uses; which statements scan a whole table; and the
 * Markdown table of docs/ARCHITECTURE.md "Indexes" (`npm run db:index-report`).
 * Test-only: nothing here runs in production.
 */
import type Database from "better-sqlite3";
import type { CapturedStatement } from "./sql-capture.js";

/** One index of the schema: its table, columns, whether unique, its partial `WHERE` (or null), and what made it (`c` CREATE INDEX, `pk`, `u` UNIQUE). */
export interface SchemaIndex {
  name: string;
  table: string;
  columns: string[];
  unique: boolean;
  where: string | null;
  origin: "c" | "pk" | "u";
}

/** A statement and its plan: `origin` `captured` (the runtime prepared it) or `foreign key` (SQLite runs it for an `ON DELETE` action). */
export interface PlannedStatement {
  sql: string;
  origin: "captured" | "foreign key";
  /** Runtime functions that prepared it (`effect.repository.findById`), or the foreign key it stands for. */
  sources: string[];
  steps: string[];
  /** The `detail` column of each `EXPLAIN QUERY PLAN` row, in order. */
  plan: string[];
  /** Indexes (schema names, `sqlite_autoindex_*` included) the plan reads. */
  indexes: string[];
  /** Tables the plan reads whole (`SCAN t`, with or without an index for order, or an automatic index). */
  scans: string[];
}

/** Every index of the store's schema (explicit and automatic), sorted by table then name. */
export function schemaIndexes(sqlite: Database.Database): SchemaIndex[] {
  const tables = sqlite
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '__drizzle%' ORDER BY name",
    )
    .pluck()
    .all() as string[];
  const out: SchemaIndex[] = [];
  for (const table of tables) {
    const list = sqlite.prepare(`PRAGMA index_list("${table}")`).all() as Array<{
      name: string;
      unique: number;
      origin: string;
      partial: number;
    }>;
    for (const ix of list) {
      const columns = (sqlite.prepare(`PRAGMA index_info("${ix.name}")`).all() as Array<{ seqno: number; name: string }>)
        .sort((a, b) => a.seqno - b.seqno)
        .map((c) => c.name);
      const ddl = sqlite.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?").pluck().get(ix.name) as string | null;
      const where = ix.partial && ddl ? (/\bWHERE\b([\s\S]*)$/i.exec(ddl)?.[1]?.trim() ?? null) : null;
      out.push({ name: ix.name, table, columns, unique: ix.unique === 1, where, origin: ix.origin as SchemaIndex["origin"] });
    }
  }
  return out.sort((a, b) => a.table.localeCompare(b.table) || a.name.localeCompare(b.name));
}

/** How many `?` parameters `sql` has (outside string literals, quoted identifiers and comments). */
function parameterCount(sql: string): number {
  let n = 0;
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i]!;
    if (c === "'" || c === '"' || c === "`") {
      const end = sql.indexOf(c, i + 1);
      i = end < 0 ? sql.length : end;
    } else if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      i = end < 0 ? sql.length : end;
    } else if (c === "?") n++;
  }
  return n;
}

/** The table a plan row names (`SCAN r` for `session_runs r`): the name itself when it is a table, else the table it aliases in `sql`. */
function tableOf(name: string, sql: string, tables: ReadonlySet<string>): string {
  if (tables.has(name)) return name;
  const alias = new RegExp(`["\`]?(\\w+)["\`]?\\s+(?:AS\\s+)?["\`]?${name}["\`]?(?=[\\s,)]|$)`, "gi");
  for (const m of sql.matchAll(alias)) if (tables.has(m[1]!)) return m[1]!;
  return name;
}

/** `EXPLAIN QUERY PLAN` of `sql` on `sqlite` (parameters bound to null: the runtime runs no ANALYZE, so values never steer a plan). */
function explainPlan(sqlite: Database.Database, sql: string): string[] {
  const stmt = sqlite.prepare(`EXPLAIN QUERY PLAN ${sql}`);
  const rows = stmt.all(...new Array<null>(parameterCount(sql)).fill(null)) as Array<{ detail: string }>;
  return rows.map((r) => r.detail);
}

/**
 * Reads the indexes and whole-table scans out of a plan. A WITHOUT ROWID table's rows live in its primary key's
 * B-tree, which the plan names `USING PRIMARY KEY`: that reads the table's automatic primary-key index
 * (`primaryKeys`: table → that index's name).
 */
function analyse(
  plan: string[],
  sql: string,
  tables: ReadonlySet<string>,
  primaryKeys: ReadonlyMap<string, string>,
): { indexes: string[]; scans: string[] } {
  const indexes = new Set<string>();
  const scans = new Set<string>();
  for (const detail of plan) {
    const idx = /USING (?:COVERING )?INDEX (\w+)/.exec(detail);
    if (idx && !/AUTOMATIC/.test(detail)) indexes.add(idx[1]!);
    const pk = /^SEARCH (\w+) USING PRIMARY KEY/.exec(detail);
    const pkIndex = pk ? primaryKeys.get(tableOf(pk[1]!, sql, tables)) : undefined;
    if (pkIndex) indexes.add(pkIndex);
    const scan = /^SCAN (\w+)/.exec(detail);
    if (scan && scan[1] !== "CONSTANT") scans.add(tableOf(scan[1]!, sql, tables));
    const auto = /^SEARCH (\w+) USING AUTOMATIC/.exec(detail);
    if (auto) scans.add(tableOf(auto[1]!, sql, tables));
  }
  return { indexes: [...indexes].sort(), scans: [...scans].filter((t) => tables.has(t)).sort() };
}

interface ForeignKey {
  child: string;
  column: string;
  parent: string;
  onDelete: string;
}

/** Every foreign key of the schema (child column → parent table, and its `ON DELETE` action). */
function foreignKeys(sqlite: Database.Database, tables: readonly string[]): ForeignKey[] {
  return tables.flatMap((child) =>
    (sqlite.prepare(`PRAGMA foreign_key_list("${child}")`).all() as Array<{ table: string; from: string; on_delete: string }>).map(
      (fk) => ({
        child,
        column: fk.from,
        parent: fk.table,
        onDelete: fk.on_delete,
      }),
    ),
  );
}

/**
 * The statements SQLite runs itself when rows of a table are deleted (foreign keys on): for every
 * foreign key whose parent table loses rows (a captured `DELETE`, or a cascade from one), the
 * child lookup of its `ON DELETE` action: `DELETE FROM child WHERE col = ?` (CASCADE), `UPDATE
 * child SET col = NULL WHERE col = ?` (SET NULL), else `SELECT 1 FROM child WHERE col = ?` (the
 * check). Without an index on the child column each is a scan of the child table per deleted row.
 */
function foreignKeyStatements(sqlite: Database.Database, captured: readonly CapturedStatement[]): CapturedStatement[] {
  const tables = sqlite
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '__drizzle%'")
    .pluck()
    .all() as string[];
  const fks = foreignKeys(sqlite, tables);
  const deletedBy = new Map<string, Set<string>>();
  for (const s of captured) {
    const m = /^\s*DELETE\s+FROM\s+["`]?(\w+)/i.exec(s.sql);
    if (m) deletedBy.set(m[1]!, new Set([...(deletedBy.get(m[1]!) ?? []), ...s.sources]));
  }
  const out = new Map<string, CapturedStatement>();
  const queue = [...deletedBy.keys()];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const fk of fks.filter((f) => f.parent === parent)) {
      const sql =
        fk.onDelete === "CASCADE"
          ? `DELETE FROM "${fk.child}" WHERE "${fk.column}" = ?`
          : fk.onDelete === "SET NULL"
            ? `UPDATE "${fk.child}" SET "${fk.column}" = NULL WHERE "${fk.column}" = ?`
            : `SELECT 1 FROM "${fk.child}" WHERE "${fk.column}" = ?`;
      const source = `ON DELETE ${fk.onDelete} ${fk.parent} → ${fk.child}.${fk.column}`;
      const entry = out.get(sql) ?? { sql, sources: new Set<string>(), steps: new Set<string>() };
      entry.sources.add(source);
      out.set(sql, entry);
      if (fk.onDelete === "CASCADE" && !deletedBy.has(fk.child)) {
        deletedBy.set(fk.child, new Set([source]));
        queue.push(fk.child);
      }
    }
  }
  return [...out.values()];
}

/** Plans every captured statement and every foreign-key lookup it implies, on `sqlite` (a migrated store). */
export function planStatements(sqlite: Database.Database, captured: readonly CapturedStatement[]): PlannedStatement[] {
  const tables = new Set(sqlite.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]);
  const primaryKeys = new Map(schemaIndexes(sqlite).flatMap((ix) => (ix.origin === "pk" ? [[ix.table, ix.name] as const] : [])));
  const plan = (s: CapturedStatement, origin: PlannedStatement["origin"]): PlannedStatement => {
    const details = explainPlan(sqlite, s.sql);
    // A DELETE's plan goes on with the actions of its own foreign keys: a captured statement owns them
    // all (they run for it); a foreign-key action owns only its first row, the lookup of its child rows
    // (the deeper levels are foreign-key actions of their own).
    const owned = origin === "captured" ? details : details.slice(0, 1);
    return {
      sql: s.sql,
      origin,
      sources: [...s.sources].sort(),
      steps: [...s.steps],
      plan: details,
      ...analyse(owned, s.sql, tables, primaryKeys),
    };
  };
  return [...captured.map((s) => plan(s, "captured")), ...foreignKeyStatements(sqlite, captured).map((s) => plan(s, "foreign key"))];
}

/**
 * Non-unique indexes made redundant by another index of the same table: their columns are a
 * prefix of the other's (or equal), with the same partial `WHERE` (or the other has none), so
 * every lookup they serve the other serves too. A partial index is never redundant with a full one
 * (it holds fewer rows). Each is `[redundant, covering]`.
 */
export function prefixRedundantIndexes(indexes: readonly SchemaIndex[]): Array<[SchemaIndex, SchemaIndex]> {
  const out: Array<[SchemaIndex, SchemaIndex]> = [];
  for (const a of indexes) {
    if (a.unique) continue;
    for (const b of indexes) {
      if (a === b || a.table !== b.table || b.columns.length < a.columns.length) continue;
      if (b.where !== null && b.where !== a.where) continue;
      // A partial index under a full one is not redundant: it holds fewer rows, and that is its point.
      if (a.where !== null && a.where !== b.where) continue;
      if (a.columns.every((c, i) => b.columns[i] === c)) out.push([a, b]);
    }
  }
  return out;
}
