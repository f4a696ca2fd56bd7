import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { newUlid } from "@mosoo/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CreateIssueToolResultSchema, startFixtureProvider, type FixtureProviderHandle } from "../src/index.js";
import { callCreateIssue, connectHttp, firstText, tempDbFile } from "./helpers.js";

describe("createIssue over Streamable HTTP", () => {
  let provider: FixtureProviderHandle;
  let client: Client;

  beforeEach(async () => {
    provider = await startFixtureProvider({ dbFile: tempDbFile() });
    client = await connectHttp(provider.url);
  });
  afterEach(async () => {
    await client.close();
    await provider.close();
  });

  it("serves on 127.0.0.1 under /mcp and /control", () => {
    expect(provider.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(provider.controlUrl).toBe(provider.url.replace(/\/mcp$/, "/control"));
    expect(provider.port).toBeGreaterThan(0);
  });

  it("refuses a call without an idempotency key and writes nothing", async () => {
    const result = await callCreateIssue(client, { title: "t", body: "b" });
    expect(result.isError).toBe(true);
    expect(firstText(result)).toMatch(/^idempotency_key_required/);
    expect(result.structuredContent).toBeUndefined();
    expect(provider.stats().writes).toEqual({});
  });

  it("refuses a key that is not a string", async () => {
    const result = (await client.callTool({
      name: "createIssue",
      arguments: { title: "t", body: "b" },
      _meta: { "io.mosoo/idempotency-key": 42 },
    })) as { isError?: boolean; content: Array<{ type: string; text?: string }> };
    expect(result.isError).toBe(true);
    expect(result.content[0]?.text).toMatch(/^idempotency_key_invalid/);
    expect(provider.stats().writes).toEqual({});
  });

  it("writes once per key; the same key and arguments replay the recorded issue", async () => {
    const key = newUlid();
    const first = await callCreateIssue(client, { title: "Login broken", body: "500 on /login" }, key);
    expect(first.isError).toBeFalsy();
    const parsed = CreateIssueToolResultSchema.parse(first);
    expect(parsed.content[0]?.text).toBe(`Created issue #${parsed.structuredContent.number}: Login broken`);
    expect(parsed._meta["io.mosoo/provider-operation-id"]).toBe(parsed.structuredContent.issueId);

    // Same arguments in another key order: same fingerprint, so a replay.
    const second = await callCreateIssue(client, { body: "500 on /login", title: "Login broken" }, key);
    expect(second.isError).toBeFalsy();
    expect(second.structuredContent).toEqual(first.structuredContent);
    expect(second._meta).toEqual(first._meta);
    expect(second.content).toEqual(first.content);

    const stats = provider.stats();
    expect(stats.writes).toEqual({ [key]: 1 });
    expect(stats.createCalls).toEqual({ [key]: 2 });
  });

  it("gives each key its own issue with increasing numbers", async () => {
    const a = CreateIssueToolResultSchema.parse(await callCreateIssue(client, { title: "a", body: "" }, newUlid()));
    const b = CreateIssueToolResultSchema.parse(await callCreateIssue(client, { title: "b", body: "" }, newUlid()));
    expect(b.structuredContent.number).toBe(a.structuredContent.number + 1);
    expect(b.structuredContent.issueId).not.toBe(a.structuredContent.issueId);
    expect(Object.values(provider.stats().writes)).toEqual([1, 1]);
  });

  it("refuses the same key with different arguments (idempotency_conflict) and writes nothing more", async () => {
    const key = newUlid();
    await callCreateIssue(client, { title: "one", body: "x" }, key);
    const conflict = await callCreateIssue(client, { title: "two", body: "x" }, key);
    expect(conflict.isError).toBe(true);
    expect(firstText(conflict)).toMatch(/^idempotency_conflict/);
    const stats = provider.stats();
    expect(stats.writes).toEqual({ [key]: 1 });
    expect(stats.createCalls).toEqual({ [key]: 2 });
  });

  it("rejects unknown arguments instead of fingerprinting a stripped copy", async () => {
    const key = newUlid();
    const result = await callCreateIssue(client, { title: "t", body: "b", extra: 1 }, key);
    expect(result.isError).toBe(true);
    expect(firstText(result)).toMatch(/Input validation error/);
    expect(provider.stats().writes).toEqual({});
  });

  it("failBeforeCommit answers provider_unavailable and writes nothing; clearing it lets the key commit", async () => {
    const key = newUlid();
    provider.setFaults({ failBeforeCommit: true });
    const refused = await callCreateIssue(client, { title: "t", body: "b" }, key);
    expect(refused.isError).toBe(true);
    expect(firstText(refused)).toMatch(/^provider_unavailable/);
    expect(provider.stats().writes).toEqual({});
    expect(provider.stats().createCalls).toEqual({ [key]: 1 });

    provider.setFaults({ failBeforeCommit: false });
    const created = await callCreateIssue(client, { title: "t", body: "b" }, key);
    expect(created.isError).toBeFalsy();
    expect(provider.stats().writes).toEqual({ [key]: 1 });
  });
});
