// migratePostgres's connection has a connect timeout: a server that accepts TCP but never answers
// (a hung PostgreSQL, a proxy with nothing behind it) fails the start with store.connect_timeout
// instead of hanging it. No PostgreSQL needed: a TCP server that holds every socket open, silent.
import { createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { migratePostgres, PgConnectTimeoutError } from "../src/platform/db/postgres/migrate-postgres.js";

let server: Server | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A TCP server on 127.0.0.1 that accepts connections and never writes a byte; resolves with its port. */
async function silentServer(): Promise<number> {
  server = createServer((socket) => void sockets.push(socket));
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return (server!.address() as { port: number }).port;
}

describe("migratePostgres connect timeout", () => {
  it("fails with store.connect_timeout naming host, port and database but not the password", async () => {
    const port = await silentServer();
    const failure = await migratePostgres(`postgres://mosoo:hunter2secret@127.0.0.1:${port}/ledger`, { connectTimeoutMs: 300 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(PgConnectTimeoutError);
    expect(failure).toMatchObject({ code: "store.connect_timeout", target: `127.0.0.1:${port}/ledger`, timeoutMs: 300 });
    expect(String((failure as Error).message)).not.toContain("hunter2secret");
    expect(sockets.length).toBeGreaterThan(0); // it did reach the server, which never answered
  });
});
