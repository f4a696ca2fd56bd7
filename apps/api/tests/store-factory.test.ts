// Selecting the store (docs/DESIGN.md §11): SQLite by default, PostgreSQL when MOSOO_DATABASE_URL is
// set; bad values are refused at startup in one line that never echoes the URL (it may carry a password).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase, type TestDatabase } from "@mosoo/test-postgres";
import pino from "pino";
import { ConfigError, loadApiConfig } from "../src/config/api-config.js";
import { startApi } from "../src/server.js";
import { openStore, storeConfigFrom } from "../src/platform/db/store-factory.js";
import { redactDatabaseUrl } from "../src/config/configured-store.js";

describe("the store configuration", () => {
  it("is the SQLite file unless MOSOO_DATABASE_URL is set", () => {
    const sqlite = loadApiConfig({ MOSOO_DB_FILE: "/abs/x.db" });
    expect(storeConfigFrom(sqlite)).toEqual({ kind: "sqlite", file: "/abs/x.db" });
    const pg = loadApiConfig({
      MOSOO_DATABASE_URL: "postgres://u:secret@db.internal:5432/mosoo?sslmode=require",
      MOSOO_DATABASE_POOL_SIZE: "7",
    });
    expect(storeConfigFrom(pg)).toEqual({
      kind: "postgres",
      url: "postgres://u:secret@db.internal:5432/mosoo?sslmode=require",
      poolSize: 7,
    });
    expect(storeConfigFrom(loadApiConfig({ MOSOO_DATABASE_URL: "postgresql://localhost/mosoo" }))).toEqual({
      kind: "postgres",
      url: "postgresql://localhost/mosoo",
      poolSize: undefined,
    });
  });

  it("refuses a URL that is not postgres:// in one line without echoing it", () => {
    for (const bad of ["mysql://u:hunter2hunter2@h/db", "postgres://u:hunter2hunter2@[bad", "hunter2hunter2"]) {
      expect(() => loadApiConfig({ MOSOO_DATABASE_URL: bad })).toThrow(
        /^config\.invalid: MOSOO_DATABASE_URL: must be a postgres:\/\/ or postgresql:\/\/ URL$/,
      );
      try {
        loadApiConfig({ MOSOO_DATABASE_URL: bad });
      } catch (err) {
        expect((err as Error).message).not.toContain("hunter2");
      }
    }
  });

  it("refuses a pool size out of range, or without a PostgreSQL URL", () => {
    expect(() => loadApiConfig({ MOSOO_DATABASE_URL: "postgres://h/db", MOSOO_DATABASE_POOL_SIZE: "0" })).toThrow(
      /^config\.invalid: MOSOO_DATABASE_POOL_SIZE/,
    );
    expect(() => loadApiConfig({ MOSOO_DATABASE_URL: "postgres://h/db", MOSOO_DATABASE_POOL_SIZE: "ten" })).toThrow(
      /^config\.invalid: MOSOO_DATABASE_POOL_SIZE/,
    );
    expect(() => loadApiConfig({ MOSOO_DATABASE_POOL_SIZE: "5" })).toThrow(
      /^config\.invalid: MOSOO_DATABASE_POOL_SIZE: only applies to a PostgreSQL store/,
    );
  });
});

describe("the API startup", () => {
  it("refuses an unreachable PostgreSQL store in one config.invalid line that never echoes the URL or its password", async () => {
    const config = loadApiConfig({ MOSOO_DATABASE_URL: "postgres://u:pw-hunter2@127.0.0.1:1/mosoo" });
    const err = await startApi(config, pino({ level: "silent" }), { sweep: false }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/^config\.invalid: MOSOO_DATABASE_URL: cannot open the PostgreSQL store: .*ECONNREFUSED/);
    expect((err as Error).message).not.toContain("hunter2");
    expect((err as Error).message).not.toContain("\n");
  });

  it("redacts the URL and its password from a driver message", () => {
    const url = "postgres://mosoo:s%40cret@db.internal:5432/mosoo";
    expect(redactDatabaseUrl(`failed at ${url}: password s@cret refused`, url)).toBe("failed at ***: password *** refused");
  });
});

describe("openStore", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await useTestDatabase("store_factory");
  }, 120_000);
  afterAll(async () => {
    await database?.drop();
  });

  it("opens the SQLite store by default and the PostgreSQL store (migrated) for a URL", async () => {
    const sqlite = await openStore({ kind: "sqlite", file: ":memory:" });
    expect(sqlite.dialect).toBe("sqlite");
    await sqlite.close();
    const pg = await openStore({ kind: "postgres", url: database.url, poolSize: 2 });
    try {
      expect(pg.dialect).toBe("postgres");
      const n = await pg.read(
        async (tx) => (await tx.db.select({ id: tx.tables.externalToolEffects.id }).from(tx.tables.externalToolEffects)).length,
      );
      expect(n).toBe(0);
    } finally {
      await pg.close();
    }
  });

  it("serves the API on the PostgreSQL store of MOSOO_DATABASE_URL (migrated at open)", async () => {
    const api = await startApi(
      loadApiConfig({ MOSOO_DATABASE_URL: database.url, MOSOO_DATABASE_POOL_SIZE: "3", MOSOO_PORT: "0" }),
      pino({ level: "silent" }),
      {
        sweep: false,
      },
    );
    try {
      expect(api.store.dialect).toBe("postgres");
      const res = await fetch(`${api.url}/health`);
      expect(res.status).toBe(200);
    } finally {
      await api.close();
    }
  });

  it("refuses a database that does not exist in one line without the password", async () => {
    const missing = new URL(database.url);
    missing.pathname = "/no_such_database_here";
    const err = await startApi(loadApiConfig({ MOSOO_DATABASE_URL: missing.toString(), MOSOO_PORT: "0" }), pino({ level: "silent" }), {
      sweep: false,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/^config\.invalid: MOSOO_DATABASE_URL: cannot open the PostgreSQL store: .*does not exist/);
    if (missing.password) expect((err as Error).message).not.toContain(missing.password);
  });

  it("fails to open (nothing left open) when the server refuses the database", async () => {
    const missing = new URL(database.url);
    missing.pathname = "/no_such_database_here";
    await expect(openStore({ kind: "postgres", url: missing.toString() })).rejects.toThrow(/does not exist/);
  });
});
