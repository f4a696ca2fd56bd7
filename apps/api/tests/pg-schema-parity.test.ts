// Schema parity (docs/DESIGN.md §11): the PostgreSQL schema (src/platform/db/postgres/postgres-schema.ts)
// must describe the same tables as the SQLite schema (src/platform/db/sqlite/sqlite-schema.ts), because the same repository
// code runs on both. A change to sqlite-schema.ts that forgets the PostgreSQL side fails here (and then
// `npm run db:generate:pg` in apps/api writes its migration).
import { is, type InferInsertModel, type InferSelectModel, type SQL } from "drizzle-orm";
import { getTableConfig as getPgTableConfig, PgDialect, PgTable } from "drizzle-orm/pg-core";
import { getTableConfig as getSqliteTableConfig, SQLiteSyncDialect, SQLiteTable } from "drizzle-orm/sqlite-core";
import { describe, expect, expectTypeOf, it } from "vitest";
import * as pgSchema from "../src/platform/db/postgres/postgres-schema.js";
import * as sqliteSchema from "../src/platform/db/sqlite/sqlite-schema.js";

const sqliteDialect = new SQLiteSyncDialect();
const pgDialect = new PgDialect();

/**
 * The only places where the two dialects spell a constraint differently, by constraint/index name:
 * [SQLite text, PostgreSQL text]. Each pair must still occur (a stale entry fails), and nothing else may differ.
 */
const DIALECT_TRANSLATIONS: Record<string, [string, string]> = {
  // SQLite's null-safe comparison `IS NOT` is `IS DISTINCT FROM` in PostgreSQL.
  external_tool_effects_contradiction_check: [
    "operator_attention IS NOT 'contradicted_by_provider'",
    "operator_attention IS DISTINCT FROM 'contradicted_by_provider'",
  ],
  // the task id's characters (printable ASCII without space): a GLOB class in SQLite, a regular expression in PostgreSQL.
  external_tool_effects_task_id_check: ["task_id NOT GLOB '*[^!-~]*'", "task_id !~ '[^!-~]'"],
  // `terminal` is a real boolean in PostgreSQL; SQLite stores 0/1 behind drizzle's boolean mode.
  run_events_one_terminal: ["terminal = 1", "terminal = true"],
};

function sqliteText(value: SQL | undefined): string | undefined {
  return value === undefined ? undefined : sqliteDialect.sqlToQuery(value).sql;
}
function pgText(value: SQL | undefined): string | undefined {
  return value === undefined ? undefined : pgDialect.sqlToQuery(value).sql;
}

/** The SQLite text translated to PostgreSQL's spelling for `name` (or unchanged). */
function translated(name: string, text: string | undefined): string | undefined {
  const pair = DIALECT_TRANSLATIONS[name];
  if (!pair || text === undefined) return text;
  expect(text, `translation of ${name} is stale`).toContain(pair[0]);
  return text.replace(pair[0], pair[1]);
}

const sqliteTables = (Object.values(sqliteSchema) as unknown[]).filter((v): v is SQLiteTable => is(v, SQLiteTable));
const pgTables = (Object.values(pgSchema) as unknown[]).filter((v): v is PgTable => is(v, PgTable));
const pgByName = new Map(pgTables.map((t) => [getPgTableConfig(t).name, t]));

describe("the PostgreSQL schema mirrors the SQLite schema", () => {
  it("has the same tables under the same export names", () => {
    expect(sqliteTables.length).toBeGreaterThanOrEqual(10);
    expect(pgTables.map((t) => getPgTableConfig(t).name).sort()).toEqual(sqliteTables.map((t) => getSqliteTableConfig(t).name).sort());
    const exportName = (schema: Record<string, unknown>, table: unknown) => Object.entries(schema).find(([, v]) => v === table)?.[0];
    for (const t of sqliteTables) {
      const name = getSqliteTableConfig(t).name;
      expect(exportName(pgSchema, pgByName.get(name)), name).toBe(exportName(sqliteSchema, t));
    }
  });

  for (const table of sqliteTables) {
    const s = getSqliteTableConfig(table);
    describe(s.name, () => {
      const p = getPgTableConfig(pgByName.get(s.name) ?? expect.fail(`no PostgreSQL table ${s.name}`));

      it("has the same columns: name, nullability, default, primary key, TypeScript data kind and enum values", () => {
        const shape = (c: {
          name: string;
          notNull: boolean;
          primary: boolean;
          hasDefault: boolean;
          default: unknown;
          dataType: string;
          enumValues: readonly string[] | undefined;
        }) => ({
          name: c.name,
          notNull: c.notNull,
          primary: c.primary,
          hasDefault: c.hasDefault,
          default: c.default,
          dataType: c.dataType,
          enumValues: c.enumValues ?? [],
        });
        expect(p.columns.map(shape)).toEqual(s.columns.map(shape));
      });

      it("stores every millisecond time as a 64-bit bigint and every other SQLite integer as a 32-bit integer", () => {
        for (const c of s.columns) {
          const pc = p.columns.find((x) => x.name === c.name);
          if (c.columnType !== "SQLiteInteger") continue;
          expect(pc?.columnType, c.name).toBe(c.name.endsWith("_ms") ? "PgBigInt53" : "PgInteger");
        }
        for (const c of s.columns.filter((x) => x.columnType === "SQLiteText")) {
          expect(p.columns.find((x) => x.name === c.name)?.columnType, `${c.name} stays text (JSON bytes round-trip)`).toBe("PgText");
        }
        for (const c of s.columns.filter((x) => x.columnType === "SQLiteBoolean")) {
          expect(p.columns.find((x) => x.name === c.name)?.columnType, c.name).toBe("PgBoolean");
        }
      });

      it("has the same CHECK constraints (names and expressions)", () => {
        const sChecks = Object.fromEntries(s.checks.map((c) => [c.name, translated(c.name, sqliteText(c.value))]));
        const pChecks = Object.fromEntries(p.checks.map((c) => [c.name, pgText(c.value)]));
        expect(pChecks).toEqual(sChecks);
      });

      it("has the same indexes (name, columns, unique, partial WHERE)", () => {
        const sIdx = s.indexes.map((i) => ({
          name: i.config.name,
          columns: i.config.columns.map((c) => (c as { name: string }).name),
          unique: i.config.unique,
          where: translated(i.config.name, sqliteText(i.config.where)),
        }));
        const pIdx = p.indexes.map((i) => ({
          name: i.config.name,
          columns: i.config.columns.map((c) => (c as { name: string }).name),
          unique: i.config.unique,
          where: pgText(i.config.where),
        }));
        const byName = (a: { name: string | undefined }, b: { name: string | undefined }) => String(a.name).localeCompare(String(b.name));
        expect(pIdx.sort(byName)).toEqual(sIdx.sort(byName));
      });

      it("has the same primary key and foreign keys (columns, target, ON DELETE)", () => {
        const fk = (f: {
          reference(): { columns: { name: string }[]; foreignColumns: { name: string }[] };
          onDelete?: string | undefined;
        }) => {
          const r = f.reference();
          const target = (r.foreignColumns[0] as unknown as { table: SQLiteTable | PgTable }).table;
          return {
            columns: r.columns.map((c) => c.name),
            target: is(target, PgTable) ? getPgTableConfig(target).name : getSqliteTableConfig(target as SQLiteTable).name,
            foreignColumns: r.foreignColumns.map((c) => c.name),
            onDelete: f.onDelete ?? "no action",
          };
        };
        const sort = (xs: { columns: string[] }[]) => xs.sort((a, b) => a.columns.join().localeCompare(b.columns.join()));
        expect(sort(p.foreignKeys.map(fk))).toEqual(sort(s.foreignKeys.map(fk)));
        expect(p.primaryKeys.map((k) => k.columns.map((c) => c.name))).toEqual(s.primaryKeys.map((k) => k.columns.map((c) => c.name)));
      });
    });
  }

  it("gives the repositories the same TypeScript row types (select and insert) on both dialects", () => {
    expectTypeOf<InferSelectModel<typeof pgSchema.sessions>>().toEqualTypeOf<InferSelectModel<typeof sqliteSchema.sessions>>();
    expectTypeOf<InferSelectModel<typeof pgSchema.driverInstances>>().toEqualTypeOf<
      InferSelectModel<typeof sqliteSchema.driverInstances>
    >();
    expectTypeOf<InferSelectModel<typeof pgSchema.sessionRuns>>().toEqualTypeOf<InferSelectModel<typeof sqliteSchema.sessionRuns>>();
    expectTypeOf<InferSelectModel<typeof pgSchema.driverCommands>>().toEqualTypeOf<InferSelectModel<typeof sqliteSchema.driverCommands>>();
    expectTypeOf<InferSelectModel<typeof pgSchema.externalToolEffects>>().toEqualTypeOf<
      InferSelectModel<typeof sqliteSchema.externalToolEffects>
    >();
    expectTypeOf<InferSelectModel<typeof pgSchema.externalToolEffectAttempts>>().toEqualTypeOf<
      InferSelectModel<typeof sqliteSchema.externalToolEffectAttempts>
    >();
    expectTypeOf<InferSelectModel<typeof pgSchema.runEvents>>().toEqualTypeOf<InferSelectModel<typeof sqliteSchema.runEvents>>();
    expectTypeOf<InferSelectModel<typeof pgSchema.effectReconciliations>>().toEqualTypeOf<
      InferSelectModel<typeof sqliteSchema.effectReconciliations>
    >();
    expectTypeOf<InferSelectModel<typeof pgSchema.effectOperatorActions>>().toEqualTypeOf<
      InferSelectModel<typeof sqliteSchema.effectOperatorActions>
    >();
    expectTypeOf<InferSelectModel<typeof pgSchema.effectOperatorRefusals>>().toEqualTypeOf<
      InferSelectModel<typeof sqliteSchema.effectOperatorRefusals>
    >();
    expectTypeOf<InferInsertModel<typeof pgSchema.externalToolEffects>>().toEqualTypeOf<
      InferInsertModel<typeof sqliteSchema.externalToolEffects>
    >();
    expectTypeOf<InferInsertModel<typeof pgSchema.runEvents>>().toEqualTypeOf<InferInsertModel<typeof sqliteSchema.runEvents>>();
    expectTypeOf<InferInsertModel<typeof pgSchema.driverCommands>>().toEqualTypeOf<InferInsertModel<typeof sqliteSchema.driverCommands>>();
  });
});
