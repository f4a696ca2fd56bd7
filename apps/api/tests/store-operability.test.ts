// What an operator meets when the store misbehaves (fresh-review findings of the PostgreSQL store):
// clear refusals at start (two stores named, a bad port or sslmode, a database migrated by a newer
// build), messages that hide the password without garbling the server's words, a `store.busy` whose
// cause reaches the log, and no store read with a run id that is not one (PostgreSQL refuses NUL).
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import pino from "pino";
import { Writable } from "node:stream";
import { Hono } from "hono";
import pg from "pg";
import { useTestDatabase } from "@mosoo/test-postgres";
import { ConfigError, loadApiConfig } from "../src/config/api-config.js";
import { databaseUrlProblem, openApiStore, redactDatabaseUrl, storeOpenFailureLine } from "../src/config/configured-store.js";
import { toErrorResponse } from "../src/entry/http/http-errors.js";
import { StoreBusyError } from "../src/platform/db/store-busy.js";
import { migratePostgres } from "../src/platform/db/postgres/migrate-postgres.js";
import { StoreSchemaNewerError } from "../src/platform/db/schema-version.js";
import { openPostgresTarget } from "./helpers/pg-store-targets.js";
import { createTempDir } from "./kit/store.js";
import { buildHttpApp, buildRuntime, createManualClock } from "./kit/index.js";
import { requestJson, TEST_AUTH, TEST_SECRETS } from "./helpers/http-call.js";

const closers: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
});

describe("redacting a database URL from a driver message", () => {
  it("hides the URL, any URL's user-info and the password as a whole token, and leaves the server's words whole", () => {
    const url = "postgres://postgres:e@127.0.0.1:5432/postgres";
    expect(redactDatabaseUrl('password authentication failed for user "postgres"', url)).toBe(
      'password authentication failed for user "postgres"',
    );
    expect(redactDatabaseUrl(`cannot reach ${url}`, url)).toBe("cannot reach ***");
    expect(redactDatabaseUrl("retrying postgresql://admin:other-secret@db:5432/x", url)).toBe("retrying postgresql://***@db:5432/x");
    expect(redactDatabaseUrl("the password e was refused", url)).toBe("the password *** was refused");
  });
});

describe("checking a --database-url flag (verify:model, the bench)", () => {
  it("names what is wrong with a URL without echoing it, and a driver failure in one redacted line", () => {
    expect(databaseUrlProblem("postgres://u:p@h:5432/db")).toBeUndefined();
    expect(databaseUrlProblem("")).toBe("is empty");
    expect(databaseUrlProblem("mysql://u:hunter2hunter2@h/db")).toBe("must be a postgres:// or postgresql:// URL");
    const url = "postgres://u:hunter2hunter2@h:5432/db";
    const refused = Object.assign(new Error(`connect ECONNREFUSED for ${url}\n    at stack`), { code: "ECONNREFUSED" });
    expect(storeOpenFailureLine(refused, url)).toBe("connect ECONNREFUSED for ***");
    expect(storeOpenFailureLine(Object.assign(new Error("too many clients"), { code: "53300" }), url)).toBe("too many clients (53300)");
    expect(redactDatabaseUrl("no URL given here", "")).toBe("no URL given here");
  });
});

describe("the store variables at start", () => {
  it("refuses MOSOO_DB_FILE beside MOSOO_DATABASE_URL instead of ignoring the file", () => {
    expect(() => loadApiConfig({ MOSOO_DATABASE_URL: "postgres://u:p@localhost/db", MOSOO_DB_FILE: "/tmp/x.db" })).toThrow(
      /^config\.invalid: MOSOO_DB_FILE: names a SQLite store while MOSOO_DATABASE_URL names a PostgreSQL one; set only one of them$/,
    );
  });

  it("names a port outside 1-65535 and an sslmode node-postgres does not know, never the password", () => {
    const messages = ["postgres://u:hunter2hunter2@h:99999/db", "postgres://u:hunter2hunter2@h:5432/db?sslmode=bogus"].map((url) => {
      try {
        loadApiConfig({ MOSOO_DATABASE_URL: url });
        return "accepted";
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
    });
    expect(messages[0]).toBe("config.invalid: MOSOO_DATABASE_URL: the port must be 1-65535 (got 99999)");
    expect(messages[1]).toMatch(
      /^config\.invalid: MOSOO_DATABASE_URL: sslmode must be one of disable, prefer, require, verify-ca, verify-full, no-verify/,
    );
    for (const m of messages) expect(m).not.toContain("hunter2");
    expect(() => loadApiConfig({ MOSOO_DATABASE_URL: "postgres://u:p@h:5432/db?sslmode=verify-full" })).not.toThrow();
  });
});

describe("a database migrated by a newer build", () => {
  it("is refused on SQLite with config.invalid naming store.schema_newer, and the file is left as it was", async () => {
    const dir = createTempDir();
    closers.push(() => dir.remove());
    const file = `${dir.dir}/newer.db`;
    const store = await openApiStore({ dbFile: file, databaseUrl: undefined, databasePoolSize: undefined });
    await store.close();
    const raw = new Database(file);
    raw.prepare("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('from-the-future', 9999999999999)").run();
    const before = raw.prepare("SELECT count(*) AS n FROM __drizzle_migrations").get();
    raw.close();
    await expect(openApiStore({ dbFile: file, databaseUrl: undefined, databasePoolSize: undefined })).rejects.toThrow(
      /^config\.invalid: MOSOO_DB_FILE: store\.schema_newer: the database was migrated by a newer build/,
    );
    const after = new Database(file);
    expect(after.prepare("SELECT count(*) AS n FROM __drizzle_migrations").get()).toEqual(before);
    after.close();
  });

  it("is refused on the real PostgreSQL server (store.schema_newer) before anything is served", async () => {
    const database = await useTestDatabase("schema_newer");
    closers.push(() => database.drop());
    await migratePostgres(database.url);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    await client.query("INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ('from-the-future', 9999999999999)");
    await client.end();
    await expect(migratePostgres(database.url)).rejects.toBeInstanceOf(StoreSchemaNewerError);
    await expect(openApiStore({ dbFile: ":memory:", databaseUrl: database.url, databasePoolSize: undefined })).rejects.toThrow(
      /^config\.invalid: MOSOO_DATABASE_URL: cannot open the PostgreSQL store: store\.schema_newer: /,
    );
    // the operator CLI opens without migrating, and is refused the same way
    await expect(
      openApiStore({ dbFile: ":memory:", databaseUrl: database.url, databasePoolSize: undefined }, { migrate: false }),
    ).rejects.toThrow(/store\.schema_newer: /);
  }, 120_000);
});

describe("a store.busy answer", () => {
  it("says the store may be unreachable and logs the driver's cause for the operator", async () => {
    const lines: string[] = [];
    const logger = pino(
      { level: "warn" },
      new Writable({
        write(chunk, _enc, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    );
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
    const app = new Hono().get("/x", (c) => toErrorResponse(new StoreBusyError(false, { cause: refused }), c, logger));
    const res = await app.request("/x");
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: string; message: string } }).error).toEqual({
      code: "store.busy",
      message: "the store is busy or unreachable (locked, out of connections, or the database is down); retry after 1 s",
    });
    const logged = lines.map((l) => JSON.parse(l) as { msg: string; cause?: unknown }).find((l) => l.msg === "http.store_busy");
    expect(logged?.cause).toEqual({ code: "ECONNREFUSED", message: "connect ECONNREFUSED 127.0.0.1:5432" });
  });
});

describe("run routes on the real PostgreSQL server", () => {
  it("answer 400 request.invalid to a run id with a NUL byte (checked before any store read), never 500", async () => {
    const t = await openPostgresTarget("nul_run_id");
    closers.push(t.close);
    const app = buildHttpApp(buildRuntime(t.store, createManualClock()), { ...TEST_AUTH });
    const calls = [
      ["GET", "/v1/runs/x%00"],
      ["GET", "/v1/runs/%00/events"],
      ["POST", "/v1/runs/%00/tool-calls"],
    ] as const;
    for (const [method, path] of calls) {
      const res = await requestJson(app as unknown as Hono, method, path, method === "POST" ? {} : undefined, TEST_SECRETS.adminKey);
      expect({ path, status: res.status, code: res.body?.error?.code }).toEqual({ path, status: 400, code: "request.invalid" });
    }
  }, 120_000);
});
