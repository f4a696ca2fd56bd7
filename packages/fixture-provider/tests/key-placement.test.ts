import { fingerprintArguments } from "@mosoo/contracts";
import { describe, expect, it } from "vitest";
import { startFixtureProvider } from "../src/index.js";
import { callCreateIssue, callGetOperation, connectHttp, tempDbFile } from "./helpers.js";

describe("key placement: the key as a tool argument (--key-argument)", () => {
  it("reads the key from the argument, fingerprints the rest, refuses a call without it, and getOperation finds it", async () => {
    const handle = await startFixtureProvider({
      dbFile: tempDbFile(),
      fenceOnLookupMiss: true,
      keyPlacement: { in: "argument", name: "idempotency_key" },
    });
    const client = await connectHttp(handle.url);
    try {
      const args = { title: "Disk full", body: "db-1" };
      const missing = await callCreateIssue(client, args);
      expect(missing.isError).toBe(true);
      expect(JSON.stringify(missing.content)).toContain(
        'idempotency_key_required: send the idempotency key in the argument \\"idempotency_key\\"',
      );
      const created = await callCreateIssue(client, { ...args, idempotency_key: "K-1" });
      expect(created.isError).toBeFalsy();
      const replay = await callCreateIssue(client, { ...args, idempotency_key: "K-1" });
      expect(replay.structuredContent).toEqual(created.structuredContent);
      const found = (await callGetOperation(client, "K-1")).structuredContent as { found: boolean; requestFingerprint: string };
      expect(found).toMatchObject({ found: true, requestFingerprint: fingerprintArguments(args) });
      expect(handle.stats().writes["K-1"]).toBe(1);
      // A key in _meta is not where this provider looks.
      expect((await callCreateIssue(client, args, "K-2")).isError).toBe(true);
    } finally {
      await client.close();
      await handle.close();
    }
  });

  it("advertises its placement in the convention", async () => {
    const handle = await startFixtureProvider({
      dbFile: tempDbFile(),
      keyPlacement: { in: "argument", name: "idempotency_key" },
      advertiseIdempotency: true,
    });
    const client = await connectHttp(handle.url);
    try {
      const tools = (await client.listTools()).tools;
      const create = tools.find((t) => t.name === "createIssue")!;
      expect((create._meta as Record<string, { keyPlacement: unknown }>)["io.mosoo/idempotency"]!.keyPlacement).toEqual({
        in: "argument",
        name: "idempotency_key",
      });
      expect(Object.keys((create.inputSchema as { properties: Record<string, unknown> }).properties)).toContain("idempotency_key");
    } finally {
      await client.close();
      await handle.close();
    }
  });
});
