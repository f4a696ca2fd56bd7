/**
 * The operator CLI never migrates a store (docs/operating.md): `--db <file>` on a SQLite store that this build's
 * migrations have not all reached is refused (`store.schema_behind`, exit 2) and its schema is left as it was, so an
 * API of the previous build that still serves the file keeps working; a store at this build's schema is served.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { createDoubleWorld, dispatchWrite, runEffectsCli, type DoubleWorld } from "./kit/index.js";

let dir: string | undefined;
let world: DoubleWorld | undefined;
afterEach(() => {
  world?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  world = undefined;
  dir = undefined;
});

/** Runs `mosoo-effects <args>` in this process with the flag on: its exit code and output (a failure's line as `err`, unprefixed). */
const cli = (args: string[]) => runEffectsCli(args, { MOSOO_EFFECT_RECONCILIATION: "on" }, "");

/** A store file holding one dispatched write, closed again (in a new temporary folder, removed after the test). */
async function storeWithOneWrite(): Promise<string> {
  dir = mkdtempSync(join(tmpdir(), "mosoo-cli-no-migrate-"));
  const dbFile = join(dir, "api.db");
  world = createDoubleWorld({ bind: false, dbFile });
  await dispatchWrite(world);
  world.close();
  world = undefined;
  return dbFile;
}

/** The store's applied migrations and triggers, as SQLite lists them. */
function schemaOf(file: string): { migrations: number; triggers: string[] } {
  const raw = new Database(file, { readonly: true });
  try {
    return {
      migrations: raw.prepare("SELECT count(*) FROM __drizzle_migrations").pluck().get() as number,
      triggers: raw.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name").pluck().all() as string[],
    };
  } finally {
    raw.close();
  }
}

describe("the operator CLI does not migrate a SQLite store", () => {
  it("refuses a store the newest migration has not reached (store.schema_behind, exit 2) and leaves its schema as it was", async () => {
    const dbFile = await storeWithOneWrite();
    // the store as the previous build left it: its newest migration not recorded (its triggers dropped)
    const raw = new Database(dbFile);
    raw.exec("DROP TRIGGER driver_commands_advance_last_command_seq; DROP TRIGGER external_tool_effects_attempt_on_dispatch;");
    raw.exec("DELETE FROM __drizzle_migrations WHERE created_at = (SELECT max(created_at) FROM __drizzle_migrations)");
    raw.close();
    const before = schemaOf(dbFile);

    const res = await cli(["--db", dbFile, "list"]);
    expect(res.code).toBe(2);
    expect(res.err).toMatch(/^config\.invalid: --db: store\.schema_behind: /);
    expect(schemaOf(dbFile)).toEqual(before);
  });

  it("serves a store at this build's schema", async () => {
    const dbFile = await storeWithOneWrite();
    const before = schemaOf(dbFile);
    const res = await cli(["--db", dbFile, "list"]);
    expect(res, JSON.stringify(res)).toMatchObject({ code: 0 });
    expect(schemaOf(dbFile)).toEqual(before);
  });

  it("refuses an empty --db (an unset shell variable) instead of falling back to the default store file", async () => {
    const res = await cli(["--db", "", "list"]);
    expect(res.code).toBe(2);
    expect(res.err).toMatch(/request\.invalid.*--db is empty/);
  });
});
