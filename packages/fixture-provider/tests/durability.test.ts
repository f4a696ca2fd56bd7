import { newUlid } from "@mosoo/contracts";
import { describe, expect, it } from "vitest";
import { GetOperationAnswerSchema, IssueStore, startFixtureProvider } from "../src/index.js";
import { callCreateIssue, callGetOperation, connectHttp, firstText, tempDbFile } from "./helpers.js";

describe("durability of the provider's SQLite file", () => {
  it("stats, records and fences survive closing and reopening the database", async () => {
    const dbFile = tempDbFile();
    const written = newUlid();
    const fenced = newUlid();

    const first = await startFixtureProvider({ dbFile, fenceOnLookupMiss: true });
    const c1 = await connectHttp(first.url);
    const created = await callCreateIssue(c1, { title: "persist", body: "b" }, written);
    await callCreateIssue(c1, { title: "persist", body: "b" }, written);
    await callGetOperation(c1, fenced);
    const statsBefore = first.stats();
    await c1.close();
    await first.close();
    expect(statsBefore.writes).toEqual({ [written]: 1 });

    const second = await startFixtureProvider({ dbFile, fenceOnLookupMiss: false });
    const c2 = await connectHttp(second.url);
    try {
      expect(second.stats()).toEqual(statsBefore);
      const replay = await callCreateIssue(c2, { title: "persist", body: "b" }, written);
      expect(replay.structuredContent).toEqual(created.structuredContent);
      expect(replay._meta).toEqual(created._meta);
      const refused = await callCreateIssue(c2, { title: "x", body: "y" }, fenced);
      expect(firstText(refused)).toMatch(/^idempotency_key_fenced/);
      const answer = GetOperationAnswerSchema.parse((await callGetOperation(c2, written)).structuredContent);
      expect(answer.found).toBe(true);
      const stats = second.stats();
      expect(stats.writes).toEqual({ [written]: 1 });
      expect(stats.createCalls).toEqual({ [written]: 3, [fenced]: 1 });
      expect(stats.fenced).toEqual([fenced]);
    } finally {
      await c2.close();
      await second.close();
    }
  });

  it("opens the store in WAL mode with synchronous=FULL; a fence written by a lookup stops a later commit", () => {
    const store = IssueStore.open(tempDbFile());
    try {
      expect(store.durabilitySettings()).toEqual({ journalMode: "wal", synchronous: 2 });
      const key = newUlid();
      expect(store.lookupOperation(key, { fenceOnMiss: true })).toMatchObject({ found: false, fenced: true });
      const outcome = store.commitCreateIssue({ idempotencyKey: key, args: { title: "t", body: "" }, requestFingerprint: "0".repeat(64) });
      expect(outcome.kind).toBe("fenced");
      expect(store.stats().writes).toEqual({});
    } finally {
      store.close();
    }
  });
});
