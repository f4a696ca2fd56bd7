import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { fingerprintArguments, IDEMPOTENCY_KEY_META, newUlid } from "@mosoo/contracts";
import { afterEach, describe, expect, it } from "vitest";
import { GetOperationAnswerSchema, startFixtureProvider, type FixtureProviderHandle } from "../src/index.js";
import { callCreateIssue, callGetOperation, connectHttp, firstText, tempDbFile } from "./helpers.js";

async function callCloseIssue(client: Client, args: Record<string, unknown>, key: string): Promise<CallToolResult> {
  return (await client.callTool({ name: "closeIssue", arguments: args, _meta: { [IDEMPOTENCY_KEY_META]: key } })) as CallToolResult;
}

describe("closeIssue (the compensating action of createIssue)", () => {
  let provider: FixtureProviderHandle;
  let client: Client;

  async function start(fenceOnLookupMiss = false): Promise<void> {
    provider = await startFixtureProvider({ dbFile: tempDbFile(), fenceOnLookupMiss });
    client = await connectHttp(provider.url);
  }
  afterEach(async () => {
    await client.close();
    await provider.close();
  });

  async function createOne(): Promise<{ issueId: string; key: string }> {
    const key = newUlid();
    const created = await callCreateIssue(client, { title: "to close", body: "" }, key);
    return { issueId: (created.structuredContent as { issueId: string }).issueId, key };
  }

  it("closes an issue once under its own key, replays the same key, and getOperation reports it as closeIssue", async () => {
    await start();
    const { issueId, key: createKey } = await createOne();
    const closeKey = newUlid();
    const args = { issueId, reason: "compensating a duplicate" };
    const closed = await callCloseIssue(client, args, closeKey);
    expect(closed.isError).toBeFalsy();
    expect(closed.structuredContent).toMatchObject({ issueId, number: 1 });
    const again = await callCloseIssue(client, args, closeKey);
    expect(again).toEqual(closed);

    const answer = GetOperationAnswerSchema.parse((await callGetOperation(client, closeKey)).structuredContent);
    if (!answer.found) throw new Error("expected found");
    expect(answer.toolName).toBe("closeIssue");
    expect(answer.requestFingerprint).toBe(fingerprintArguments(args));
    expect(answer.operationId).toBe((closed.structuredContent as { closureId: string }).closureId);
    expect(answer.result).toEqual({ content: closed.content, structuredContent: closed.structuredContent, _meta: closed._meta });
    expect(provider.stats().writes).toEqual({ [createKey]: 1, [closeKey]: 1 });
  });

  it("refuses, writing nothing: an unknown issue, an issue closed under another key, other arguments, a createIssue key", async () => {
    await start();
    const { issueId, key: createKey } = await createOne();
    const closeKey = newUlid();
    expect(firstText(await callCloseIssue(client, { issueId: "nope" }, newUlid()))).toMatch(/^issue_not_found: /);
    await callCloseIssue(client, { issueId }, closeKey);
    expect(firstText(await callCloseIssue(client, { issueId }, newUlid()))).toMatch(/^issue_already_closed: /);
    expect(firstText(await callCloseIssue(client, { issueId, reason: "other" }, closeKey))).toMatch(/^idempotency_conflict: /);
    expect(firstText(await callCloseIssue(client, { issueId }, createKey))).toMatch(/^idempotency_conflict: /);
    expect(firstText(await callCreateIssue(client, { title: "t", body: "" }, closeKey))).toMatch(/^idempotency_conflict: /);
    expect(provider.stats().writes).toEqual({ [createKey]: 1, [closeKey]: 1 });
  });

  it("a key fenced by a lookup miss can never close anything", async () => {
    await start(true);
    const { issueId } = await createOne();
    const closeKey = newUlid();
    const miss = GetOperationAnswerSchema.parse((await callGetOperation(client, closeKey)).structuredContent);
    expect(miss).toMatchObject({ found: false, fenced: true });
    expect(firstText(await callCloseIssue(client, { issueId }, closeKey))).toMatch(/^idempotency_key_fenced: /);
    expect(provider.stats().writes[closeKey]).toBeUndefined();
  });

  it("applies the fault switches like createIssue (failBeforeCommit writes nothing)", async () => {
    await start();
    const { issueId } = await createOne();
    provider.setFaults({ failBeforeCommit: true });
    const closeKey = newUlid();
    expect(firstText(await callCloseIssue(client, { issueId }, closeKey))).toMatch(/^provider_unavailable: /);
    expect(provider.stats().createCalls[closeKey]).toBe(1);
    expect(provider.stats().writes[closeKey]).toBeUndefined();
  });
});
