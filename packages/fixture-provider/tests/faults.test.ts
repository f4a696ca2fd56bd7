import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ApiErrorBodySchema, newUlid } from "@mosoo/contracts";
import { afterEach, describe, expect, it } from "vitest";
import {
  FixtureFaultsSchema,
  FixtureStatsSchema,
  GetOperationAnswerSchema,
  startFixtureProvider,
  type FixtureProviderHandle,
  type StartFixtureProviderOptions,
} from "../src/index.js";
import { callCreateIssue, callGetOperation, connectHttp, firstText, tempDbFile, waitFor } from "./helpers.js";

describe("fault switches and the control API", () => {
  let provider: FixtureProviderHandle;
  let client: Client;

  async function start(options: Omit<StartFixtureProviderOptions, "dbFile"> = {}): Promise<void> {
    provider = await startFixtureProvider({ dbFile: tempDbFile(), ...options });
    client = await connectHttp(provider.url);
  }
  afterEach(async () => {
    await client.close();
    await provider.close();
  });

  it("a late commit (delay) after a fencing lookup miss is refused and writes nothing", async () => {
    await start({ fenceOnLookupMiss: true, faults: { delayBeforeCommitMs: 400 } });
    const key = newUlid();
    const pending = callCreateIssue(client, { title: "late", body: "b" }, key);
    await waitFor(() => provider.stats().createCalls[key] === 1);

    const miss = GetOperationAnswerSchema.parse((await callGetOperation(client, key)).structuredContent);
    expect(miss).toMatchObject({ found: false, fenced: true });

    const late = await pending;
    expect(late.isError).toBe(true);
    expect(firstText(late)).toMatch(/^idempotency_key_fenced/);
    const stats = provider.stats();
    expect(stats.writes).toEqual({});
    expect(stats.fenced).toEqual([key]);
  });

  it("without the fence, a lookup miss during the delay does not stop the late commit from landing", async () => {
    await start({ fenceOnLookupMiss: false, faults: { delayBeforeCommitMs: 300 } });
    const key = newUlid();
    const pending = callCreateIssue(client, { title: "late", body: "b" }, key);
    await waitFor(() => provider.stats().createCalls[key] === 1);
    const miss = GetOperationAnswerSchema.parse((await callGetOperation(client, key)).structuredContent);
    expect(miss).toMatchObject({ found: false, fenced: false });

    expect((await pending).isError).toBeFalsy();
    const found = GetOperationAnswerSchema.parse((await callGetOperation(client, key)).structuredContent);
    expect(found.found).toBe(true);
    expect(provider.stats().writes).toEqual({ [key]: 1 });
  });

  it("holdResponseAfterCommit: the write commits while the call is pending; POST /control/release answers it", async () => {
    await start();
    const res = await fetch(`${provider.controlUrl}/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ holdResponseAfterCommit: true }),
    });
    expect(res.status).toBe(200);
    expect(FixtureFaultsSchema.parse(await res.json()).holdResponseAfterCommit).toBe(true);

    const key = newUlid();
    let settled = false;
    const pending = callCreateIssue(client, { title: "held", body: "b" }, key).finally(() => (settled = true));
    await waitFor(() => provider.stats().writes[key] === 1);
    await waitFor(() => provider.provider.heldCount === 1);
    await new Promise((r) => setTimeout(r, 100));
    expect(settled).toBe(false);

    const lookup = GetOperationAnswerSchema.parse((await callGetOperation(client, key)).structuredContent);
    expect(lookup.found).toBe(true);

    const release = await fetch(`${provider.controlUrl}/release`, { method: "POST" });
    expect(await release.json()).toEqual({ released: 1 });
    const result = await pending;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ title: "held" });
    if (!lookup.found) throw new Error("expected found");
    expect(result.structuredContent).toEqual(lookup.result.structuredContent);
  });

  it("holdBeforeCommit: nothing commits until release; a fencing lookup miss meanwhile makes the released commit refused", async () => {
    await start({ fenceOnLookupMiss: true, faults: { holdBeforeCommit: true } });
    const key = newUlid();
    let settled = false;
    const pending = callCreateIssue(client, { title: "held before commit", body: "b" }, key).finally(() => (settled = true));
    await waitFor(() => provider.provider.heldCount === 1);
    expect(provider.stats()).toMatchObject({ writes: {}, createCalls: { [key]: 1 } });
    expect(settled).toBe(false);
    const miss = GetOperationAnswerSchema.parse((await callGetOperation(client, key)).structuredContent);
    expect(miss).toMatchObject({ found: false, fenced: true });
    const release = await fetch(`${provider.controlUrl}/release`, { method: "POST" });
    expect(await release.json()).toEqual({ released: 1 });
    const late = await pending;
    expect(late.isError).toBe(true);
    expect(firstText(late)).toMatch(/^idempotency_key_fenced/);
    expect(provider.stats().writes).toEqual({});
  });

  it("holdBeforeCommit without a lookup: the released call commits once", async () => {
    await start({ faults: { holdBeforeCommit: true } });
    const key = newUlid();
    const pending = callCreateIssue(client, { title: "held before commit", body: "b" }, key);
    await waitFor(() => provider.provider.heldCount === 1);
    expect(provider.stats().writes).toEqual({});
    expect(provider.release()).toBe(1);
    expect((await pending).isError).toBeFalsy();
    expect(provider.stats().writes).toEqual({ [key]: 1 });
  });

  it("programmatic release() answers a held response and reports how many it released", async () => {
    await start({ faults: { holdResponseAfterCommit: true } });
    const key = newUlid();
    const pending = callCreateIssue(client, { title: "held", body: "b" }, key);
    await waitFor(() => provider.provider.heldCount === 1);
    expect(provider.stats().writes).toEqual({ [key]: 1 });
    expect(provider.release()).toBe(1);
    expect((await pending).isError).toBeFalsy();
    expect(provider.release()).toBe(0);
  });

  it("exitAfterCommit in-process drops the response: the write commits and the call never answers", async () => {
    await start({ faults: { exitAfterCommit: true } });
    const key = newUlid();
    await expect(callCreateIssue(client, { title: "dropped", body: "b" }, key, { timeout: 500 })).rejects.toThrow(/timed out/i);
    expect(provider.stats().writes).toEqual({ [key]: 1 });
    const answer = GetOperationAnswerSchema.parse((await callGetOperation(client, key)).structuredContent);
    expect(answer.found).toBe(true);
  });

  it("GET /control/stats returns the per-key counters", async () => {
    await start();
    const key = newUlid();
    await callCreateIssue(client, { title: "t", body: "b" }, key);
    await callCreateIssue(client, { title: "t", body: "b" }, key);
    await callGetOperation(client, key);
    const res = await fetch(`${provider.controlUrl}/stats`);
    expect(res.status).toBe(200);
    expect(FixtureStatsSchema.parse(await res.json())).toEqual({
      writes: { [key]: 1 },
      createCalls: { [key]: 2 },
      lookups: { [key]: 1 },
      fenced: [],
    });
  });

  it.each([
    ["not JSON", "{nope"],
    ["a wrong type", JSON.stringify({ delayBeforeCommitMs: "soon" })],
    ["a negative delay", JSON.stringify({ delayBeforeCommitMs: -1 })],
    ["an unknown switch", JSON.stringify({ exitAfterComit: true })],
    ["an array", JSON.stringify([true])],
  ])("POST /control/faults rejects %s with 400 and changes nothing", async (_label, body) => {
    await start({ faults: { delayBeforeCommitMs: 5 } });
    const before = provider.faults();
    const res = await fetch(`${provider.controlUrl}/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    expect(res.status).toBe(400);
    const error = ApiErrorBodySchema.parse(await res.json());
    expect(error.error.code).toBe("request.invalid");
    expect(error.error.message).not.toMatch(/\n\s+at /);
    expect(provider.faults()).toEqual(before);
  });

  it("POST /control/faults applies a partial update and keeps the other switches", async () => {
    await start({ faults: { delayBeforeCommitMs: 5 } });
    const res = await fetch(`${provider.controlUrl}/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ failBeforeCommit: true }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      delayBeforeCommitMs: 5,
      holdBeforeCommit: false,
      holdResponseAfterCommit: false,
      exitAfterCommit: false,
      failBeforeCommit: true,
      expireTasks: false,
      forgetKeys: false,
      withdrawTaskSupport: false,
    });
    const refused = await callCreateIssue(client, { title: "t", body: "b" }, newUlid());
    expect(firstText(refused)).toMatch(/^provider_unavailable/);
  });
});
