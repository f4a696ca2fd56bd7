import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { fingerprintArguments, newUlid } from "@mosoo/contracts";
import { afterEach, describe, expect, it } from "vitest";
import { GetOperationAnswerSchema, startFixtureProvider, type FixtureProviderHandle } from "../src/index.js";
import { callCreateIssue, callGetOperation, connectHttp, firstText, tempDbFile } from "./helpers.js";

describe("getOperation", () => {
  let provider: FixtureProviderHandle;
  let client: Client;

  async function start(fenceOnLookupMiss: boolean): Promise<void> {
    provider = await startFixtureProvider({ dbFile: tempDbFile(), fenceOnLookupMiss });
    client = await connectHttp(provider.url);
  }
  afterEach(async () => {
    await client.close();
    await provider.close();
  });

  it("finds a committed write with its fingerprint and the exact result createIssue returned", async () => {
    await start(false);
    const key = newUlid();
    const args = { title: "Crash on save", body: "stack trace attached" };
    const created = await callCreateIssue(client, args, key);

    const lookup = await callGetOperation(client, key);
    expect(lookup.isError).toBeFalsy();
    const answer = GetOperationAnswerSchema.parse(lookup.structuredContent);
    expect(JSON.parse(firstText(lookup))).toEqual(lookup.structuredContent);
    if (!answer.found) throw new Error("expected found");
    expect(answer.idempotencyKey).toBe(key);
    expect(answer.toolName).toBe("createIssue");
    expect(answer.requestFingerprint).toBe(fingerprintArguments(args));
    expect(answer.operationId).toBe((created.structuredContent as { issueId: string }).issueId);
    expect(answer.committedAt).toBe(created._meta?.["io.mosoo/committed-at"]);
    expect(answer.result).toEqual({ content: created.content, structuredContent: created.structuredContent, _meta: created._meta });

    const stats = provider.stats();
    expect(stats.writes).toEqual({ [key]: 1 });
    expect(stats.lookups).toEqual({ [key]: 1 });
  });

  it("the forgetKeys fault answers a committed key as not found and unfenced, writes no fence, and the key answers again once it is off", async () => {
    await start(true);
    const key = newUlid();
    await callCreateIssue(client, { title: "t", body: "b" }, key);
    provider.setFaults({ forgetKeys: true });
    const forgotten = GetOperationAnswerSchema.parse((await callGetOperation(client, key)).structuredContent);
    expect(forgotten).toMatchObject({ found: false, idempotencyKey: key, fenced: false });
    expect(provider.stats()).toMatchObject({ writes: { [key]: 1 }, fenced: [] });
    provider.setFaults({ forgetKeys: false });
    const found = GetOperationAnswerSchema.parse((await callGetOperation(client, key)).structuredContent);
    expect(found).toMatchObject({ found: true, idempotencyKey: key });
  });

  it("reports a miss as not found and unfenced without fenceOnLookupMiss; the key can still commit", async () => {
    await start(false);
    const key = newUlid();
    const before = Date.now();
    const lookup = await callGetOperation(client, key);
    const answer = GetOperationAnswerSchema.parse(lookup.structuredContent);
    expect(answer).toMatchObject({ found: false, idempotencyKey: key, fenced: false });
    if (answer.found) throw new Error("expected not found");
    expect(Date.parse(answer.observedAt)).toBeGreaterThanOrEqual(before - 1);
    expect(provider.stats()).toEqual({ writes: {}, createCalls: {}, lookups: { [key]: 1 }, fenced: [] });

    const created = await callCreateIssue(client, { title: "t", body: "b" }, key);
    expect(created.isError).toBeFalsy();
    expect(provider.stats().writes).toEqual({ [key]: 1 });
  });

  it("with fenceOnLookupMiss, a miss fences the key and a later createIssue is refused forever", async () => {
    await start(true);
    const key = newUlid();
    const miss = GetOperationAnswerSchema.parse((await callGetOperation(client, key)).structuredContent);
    expect(miss).toMatchObject({ found: false, fenced: true });

    for (let i = 0; i < 2; i++) {
      const refused = await callCreateIssue(client, { title: "t", body: "b" }, key);
      expect(refused.isError).toBe(true);
      expect(firstText(refused)).toMatch(/^idempotency_key_fenced/);
    }
    const again = GetOperationAnswerSchema.parse((await callGetOperation(client, key)).structuredContent);
    expect(again).toMatchObject({ found: false, fenced: true });

    const stats = provider.stats();
    expect(stats.writes).toEqual({});
    expect(stats.fenced).toEqual([key]);
    expect(stats.createCalls).toEqual({ [key]: 2 });
    expect(stats.lookups).toEqual({ [key]: 2 });
  });

  it("with fenceOnLookupMiss, a lookup of a committed key reports it found and does not fence it", async () => {
    await start(true);
    const key = newUlid();
    await callCreateIssue(client, { title: "t", body: "b" }, key);
    const answer = GetOperationAnswerSchema.parse((await callGetOperation(client, key)).structuredContent);
    expect(answer.found).toBe(true);
    const replay = await callCreateIssue(client, { title: "t", body: "b" }, key);
    expect(replay.isError).toBeFalsy();
    expect(provider.stats().fenced).toEqual([]);
    expect(provider.stats().writes).toEqual({ [key]: 1 });
  });
});
