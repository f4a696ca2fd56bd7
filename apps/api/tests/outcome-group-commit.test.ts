/**
 * OutcomeGroupCommit (docs/DESIGN.md §3 rule 6) on a real SQLite store, no timing asserted:
 * a batch forms by count or at the end of the event-loop turn (window 0), its promises settle only
 * after its transaction committed, and a failed batch is retried outcome by outcome.
 */
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore, type SqliteStore as Store } from "../src/platform/db/sqlite/sqlite-store.js";
import { OutcomeGroupCommit } from "../src/modules/reconciliation/application/outcome-group-commit.service.js";
import { StoreCommitUnknownError } from "../src/platform/db/store-errors.js";

let store: Store | undefined;
afterEach(() => store?.closeNow());

function open(): { store: Store; commits: number[]; rows: () => number[] } {
  store = openSqliteStore(":memory:");
  store.sqlite.exec("CREATE TABLE t (v INTEGER NOT NULL UNIQUE)");
  const commits: number[] = [];
  const s = store;
  s.observeDurableWrites({
    beforeCommit: () => undefined,
    afterCommit: () => void commits.push((s.sqlite.prepare("SELECT count(*) AS n FROM t").get() as { n: number }).n),
  });
  return { store: s, commits, rows: () => (s.sqlite.prepare("SELECT v FROM t ORDER BY v").all() as Array<{ v: number }>).map((r) => r.v) };
}

const insert = (s: Store, v: number) => async (tx: Parameters<Parameters<OutcomeGroupCommit["submit"]>[0]>[0]) => {
  void tx;
  s.sqlite.prepare("INSERT INTO t (v) VALUES (?)").run(v);
  return v;
};

describe("OutcomeGroupCommit", () => {
  it("commits a full batch at once (count) in ONE transaction, and settles nothing before it", async () => {
    const { store: s, commits, rows } = open();
    const gc = new OutcomeGroupCommit(s, { maxBatch: 3, windowMs: 60_000 });
    const settled: number[] = [];
    const a = gc.submit(insert(s, 1)).then((v) => settled.push(v));
    const b = gc.submit(insert(s, 2)).then((v) => settled.push(v));
    await Promise.resolve();
    expect(rows()).toEqual([]); // queued, not written
    expect(settled).toEqual([]);
    expect(gc.pending).toBe(2);
    const c = gc.submit(insert(s, 3)).then((v) => settled.push(v));
    await Promise.all([a, b, c]);
    expect(commits).toEqual([3]); // the third filled the batch: one commit of all three
    expect(settled.sort()).toEqual([1, 2, 3]);
  });

  it("window 0: everything queued in the same event-loop turn shares one transaction", async () => {
    const { store: s, commits } = open();
    const gc = new OutcomeGroupCommit(s, { maxBatch: 64, windowMs: 0 });
    await Promise.all([1, 2, 3, 4].map((v) => gc.submit(insert(s, v))));
    expect(commits).toEqual([4]);
  });

  it("a failing batch rolls back whole, then each outcome is retried alone: only the failing one rejects", async () => {
    const { store: s, commits, rows } = open();
    const gc = new OutcomeGroupCommit(s, { maxBatch: 3, windowMs: 60_000 });
    const results = await Promise.allSettled([gc.submit(insert(s, 1)), gc.submit(insert(s, 1)), gc.submit(insert(s, 2))]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(rows()).toEqual([1, 2]);
    expect(commits).toEqual([1, 2]); // the batch never committed; two outcomes committed alone
  });

  it("maxBatch 1 commits every outcome alone at once (the behaviour before group commit)", async () => {
    const { store: s, commits } = open();
    const gc = new OutcomeGroupCommit(s, { maxBatch: 1, windowMs: 0 });
    const p = gc.submit(insert(s, 7));
    expect(await p).toBe(7);
    expect(commits).toEqual([1]);
  });

  it("refuses settings out of range", () => {
    const { store: s } = open();
    expect(() => new OutcomeGroupCommit(s, { maxBatch: 0, windowMs: 0 })).toThrow(RangeError);
    expect(() => new OutcomeGroupCommit(s, { maxBatch: 2, windowMs: -1 })).toThrow(RangeError);
  });

  it("store.commit_unknown on the batch's COMMIT reaches every caller and no write is retried alone", async () => {
    const { store: s, rows } = open();
    let transactions = 0;
    const runs: number[] = [];
    // A store whose COMMIT lands but whose connection dies before the answer (PostgreSQL): the batch did commit.
    const lossy = Object.create(s) as Store;
    lossy.transaction = async <T>(fn: Parameters<Store["transaction"]>[0]): Promise<T> => {
      transactions += 1;
      await s.transaction(fn);
      throw new StoreCommitUnknownError();
    };
    const gc = new OutcomeGroupCommit(lossy, { maxBatch: 3, windowMs: 60_000 });
    const write = (v: number) => async (tx: Parameters<Parameters<OutcomeGroupCommit["submit"]>[0]>[0]) => {
      runs.push(v);
      return insert(s, v)(tx);
    };
    const results = await Promise.allSettled([gc.submit(write(1)), gc.submit(write(2)), gc.submit(write(3))]);
    for (const r of results) {
      expect(r.status).toBe("rejected");
      expect((r as PromiseRejectedResult).reason).toBeInstanceOf(StoreCommitUnknownError);
      expect((r as PromiseRejectedResult).reason).toMatchObject({ code: "store.commit_unknown" });
    }
    expect(transactions).toBe(1); // the batch only: none retried alone
    expect(runs).toEqual([1, 2, 3]);
    expect(rows()).toEqual([1, 2, 3]); // it did commit; the callers replay and read it
  });
});
