/**
 * Every index justified by a query plan that uses it: the representative workload
 * (`helpers/index-workload.ts`, through HTTP and the services) runs under a statement capture;
 * each distinct statement, and each foreign-key action SQLite runs on a delete, gets its
 * `EXPLAIN QUERY PLAN` on a migrated store. With `INDEX_REPORT=write` (`npm run db:index-report`)
 * the last test rewrites the report in docs/ARCHITECTURE.md "Indexes" instead of comparing it.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { planStatements, prefixRedundantIndexes, schemaIndexes, type PlannedStatement, type SchemaIndex } from "./helpers/index-plans.js";
import {
  ALLOWED_SCANS,
  BIG_TABLES,
  CONSTRAINT_ONLY,
  readDocReport,
  REQUIRED_INDEXES,
  renderIndexReport,
  writeDocReport,
} from "./helpers/index-report.js";
import { runIndexWorkload } from "./helpers/index-workload.js";
import { startSqlCapture } from "./helpers/sql-capture.js";
import { openTestStore, type Store } from "./kit/index.js";

let store: Store;
let indexes: SchemaIndex[];
let planned: PlannedStatement[];

beforeAll(async () => {
  const capture = await startSqlCapture();
  try {
    await runIndexWorkload(capture);
  } finally {
    capture.stop();
  }
  store = openTestStore();
  indexes = schemaIndexes(store.sqlite);
  planned = planStatements(store.sqlite, capture.statements());
}, 180_000);
afterAll(() => store?.close());

/** One line per statement for a failure message: its runtime functions, SQL and plan. */
const describeStatements = (ps: readonly PlannedStatement[]) =>
  ps.map((p) => `- ${p.sources.join(", ")}\n    ${p.sql}\n    plan: ${p.plan.join(" | ")}`).join("\n");

describe("index plans: every index is read by a plan, no big table is read whole", () => {
  it("the workload reached every table the runtime writes and read each of the big tables", () => {
    const captured = planned.filter((p) => p.origin === "captured");
    expect(captured.length).toBeGreaterThan(60);
    for (const table of BIG_TABLES) {
      expect(
        captured.some((p) => new RegExp(`"${table}"`).test(p.sql)),
        `no captured statement names ${table}`,
      ).toBe(true);
    }
    expect(planned.some((p) => p.origin === "foreign key")).toBe(true);
  });

  it("every explicit index is used by at least one statement's plan, or is a listed constraint-only unique index", () => {
    const used = new Set(planned.flatMap((p) => p.indexes));
    const unused = indexes.filter((ix) => ix.origin === "c" && !used.has(ix.name) && !(ix.name in CONSTRAINT_ONLY)).map((ix) => ix.name);
    expect(unused, "indexes no captured plan reads: drop them, or add the query that needs them to the workload").toEqual([]);
    for (const name of Object.keys(CONSTRAINT_ONLY)) {
      const ix = indexes.find((i) => i.name === name);
      expect(ix, `CONSTRAINT_ONLY names ${name}, which the schema does not have`).toBeDefined();
      expect(ix!.unique, `${name} is listed as constraint-only but is not unique`).toBe(true);
    }
  });

  it("no non-unique index is a prefix of another index of its table (it would be merged into the longer one)", () => {
    expect(prefixRedundantIndexes(indexes).map(([a, b]) => `${a.name} ⊆ ${b.name}`)).toEqual([]);
  });

  it("no statement reads a big table whole (only SEARCH by an index or the primary key), but the listed exceptions", () => {
    const offenders = planned.filter((p) =>
      p.scans.some((t) => BIG_TABLES.includes(t) && !ALLOWED_SCANS.some((a) => a.table === t && a.sql.test(p.sql))),
    );
    expect(offenders.length, `statements that scan a big table:\n${describeStatements(offenders)}`).toBe(0);
    for (const a of ALLOWED_SCANS) {
      expect(
        planned.some((p) => p.scans.includes(a.table) && a.sql.test(p.sql)),
        `ALLOWED_SCANS entry ${a.sql} on ${a.table} matches no scanning statement any more: remove it`,
      ).toBe(true);
    }
  });

  it("each hot-path statement that could read a table's history reads its bounding index instead", () => {
    for (const r of REQUIRED_INDEXES) {
      const mine = planned.filter((p) => p.origin === "captured" && p.sources.includes(r.source));
      expect(mine.length, `the workload ran no statement of ${r.source}`).toBeGreaterThan(0);
      const off = mine.filter((p) => !p.indexes.includes(r.index));
      expect(off.length, `${r.source} must read ${r.index} (${r.why}):\n${describeStatements(off)}`).toBe(0);
    }
  });

  it("plans do not depend on the data: the runtime never runs ANALYZE, so a migrated store has no statistics", () => {
    expect(store.sqlite.prepare("SELECT count(*) FROM sqlite_master WHERE name LIKE 'sqlite_stat%'").pluck().get()).toBe(0);
    const src = join(import.meta.dirname, "../src");
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((n) =>
        statSync(join(dir, n)).isDirectory() ? files(join(dir, n)) : n.endsWith(".ts") ? [join(dir, n)] : [],
      );
    const analyzing = files(src).filter((f) =>
      /\bANALYZE\b|optimize\b/.test(readFileSync(f, "utf8").replace(/\/\/.*|\/\*[\s\S]*?\*\//g, "")),
    );
    expect(analyzing, "the runtime now gathers statistics: derive the plans on a store seeded like production").toEqual([]);
  });

  it('docs/ARCHITECTURE.md "Indexes" is the report of this run (npm run db:index-report rewrites it)', () => {
    const report = renderIndexReport(indexes, planned, store.sqlite.prepare("SELECT sqlite_version()").pluck().get() as string);
    if (process.env["INDEX_REPORT"] === "write") {
      writeDocReport(report);
      process.stdout.write(`${report}\n\n${describeStatements(planned)}\n`);
    }
    expect(readDocReport()).toBe(report);
  });
});
