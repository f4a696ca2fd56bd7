// The fault helpers the soak uses: pause() freezes the postmaster and its backends (a query waits,
// nothing is lost) and resume() continues them; crash() and restart() on a durable (fsync on) server
// keep every committed row.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { startPostgres } from "../src/index.js";

/** The one-letter state of a process (`/proc/<pid>/stat`, after the command name): `T` when stopped. */
function stateOf(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0]!;
}

describe("server faults", () => {
  it("pause() stops the postmaster and its backends, a query waits until resume(), and the data stays", async () => {
    const server = await startPostgres();
    const client = new pg.Client({ connectionString: server.url });
    try {
      await client.connect();
      await client.query("CREATE TABLE t (v int)");
      const postmaster = Number(readFileSync(join(server.dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
      const paused = server.pause();
      expect(paused[0]).toBe(postmaster);
      expect(paused.length).toBeGreaterThan(1); // the backends and auxiliary processes too
      // a signal is delivered asynchronously: poll (a bound for a hang, not a timing assertion)
      for (let i = 0; i < 100 && !paused.map(stateOf).every((s) => s === "T"); i += 1) await sleep(50);
      expect(paused.map(stateOf)).toEqual(paused.map(() => "T"));
      let answered = false;
      const insert = client.query("INSERT INTO t VALUES (1) RETURNING v").then((r) => {
        answered = true;
        return r.rows;
      });
      await sleep(1_000);
      expect(answered).toBe(false); // a bound for nothing: the backend is stopped, it cannot answer
      server.resume();
      expect(await insert).toEqual([{ v: 1 }]);
      expect(
        paused.filter((p) => {
          try {
            return stateOf(p) === "T";
          } catch {
            return false;
          }
        }),
      ).toEqual([]);
    } finally {
      server.resume(); // a stopped backend would never answer the client's goodbye
      await client.end().catch(() => undefined);
      await server.stop();
    }
  }, 120_000);

  it("crash() then restart() on a durable server keeps a committed row; stop() ends a paused server", async () => {
    const server = await startPostgres({ fsync: true });
    try {
      const a = new pg.Client({ connectionString: server.url });
      await a.connect();
      await a.query("CREATE TABLE t (v int)");
      await a.query("INSERT INTO t VALUES (42)");
      a.on("error", () => undefined); // the crash cuts this connection
      await server.crash();
      await a.end().catch(() => undefined);
      await server.restart();
      const b = new pg.Client({ connectionString: server.url });
      await b.connect();
      expect((await b.query("SELECT v FROM t")).rows).toEqual([{ v: 42 }]);
      await b.end();
      server.pause();
    } finally {
      await server.stop();
    }
  }, 120_000);
});
