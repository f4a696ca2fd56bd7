/**
 * The attack battery's last findings (docs/DESIGN.md §10), one case each through the HTTP app: the
 * status, the stable error code, and every table byte-identical afterwards (a full dump before and
 * after). Sessions record the key that created them; a Driver-restricted key neither joins nor
 * deletes another key's session (even an empty one, or one older than owners); a run or session it
 * may not reach answers exactly as a missing one; a repeated query parameter is refused; ULIDs stop
 * at `7ZZZ…`; an oversized body gets its 413 over a real socket (not a reset).
 */
import { connect } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_BODY_BYTES } from "@mosoo/contracts";
import { RECONCILIATION_OFF } from "../src/modules/reconciliation/application/reconciliation-settings.config.js";
import { loadApiConfig } from "../src/config/api-config.js";
import { startApi, type RunningApi } from "../src/server.js";
import type { SqliteStore } from "../src/platform/db/sqlite/sqlite-store.js";
import { requestJson, TEST_AUTH, TEST_CREDENTIALS_ENV, TEST_SECRETS } from "./helpers/http-call.js";
import { dumpAllTables } from "./helpers/reconciliation-db.js";
import { buildHttpApp, connectDriver, createTestWorld, type TestWorld } from "./kit/index.js";

const KEY_A = "test-tenant-a-key-0123456789abcdef";
const KEY_B = "test-tenant-b-key-0123456789abcdef";
const ALL = ["runs:write" as const, "runs:read" as const, "runs:delete" as const];
const MISSING_ULID = "01JDZZZZZZZZZZZZZZZZZZZZZZ";

let world: TestWorld | undefined;
let api: RunningApi | undefined;
let dir: string | undefined;
afterEach(async () => {
  world?.close();
  await api?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  world = api = dir = undefined;
});

/** Drivers A and B, tenant keys restricted to one each, the admin key; tenant B holds a run (and so a session). */
async function tenants() {
  const f = createTestWorld({ reconciliation: { ...RECONCILIATION_OFF, enabled: true } });
  world = f;
  const a = await connectDriver(f.runtime, "driver-a");
  const b = await connectDriver(f.runtime, "driver-b");
  const app = buildHttpApp(f.runtime, {
    ...TEST_AUTH,
    apiKeys: [
      ...TEST_AUTH.apiKeys,
      { name: "tenant-a", secret: KEY_A, scopes: [...ALL], drivers: [a.instance.id] },
      { name: "tenant-b", secret: KEY_B, scopes: [...ALL], drivers: [b.instance.id] },
    ],
  });
  const send = (method: string, path: string, key: string, body?: unknown) => requestJson(app, method, path, body, key);
  const runB = await send("POST", "/v1/runs", KEY_B, { driverInstanceId: b.instance.id });
  expect(runB.status).toBe(201);
  const dump = () => dumpAllTables(f.store.sqlite);
  /** `req` is refused with `status` and `code`, and no row of any table changed. */
  const refused = async (req: Promise<{ status: number; body: any }>, status: number, code: string) => {
    const before = dump();
    const res = await req;
    expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
    expect(dump()).toBe(before);
    return res.body;
  };
  return { f, app, a, b, send, refused, runB: runB.body as { runId: string; sessionId: string } };
}

describe("a session belongs to the key that created it", () => {
  it("records the creating key's name", async () => {
    const { f, runB } = await tenants();
    const row = f.store.sqlite.prepare("SELECT created_by_key FROM sessions WHERE id = ?").get(runB.sessionId);
    expect(row).toEqual({ created_by_key: "tenant-b" });
  });

  it("a key restricted to Driver A cannot create a run in tenant B's session (404 session.not_found, as a missing one)", async () => {
    const { a, send, refused, runB } = await tenants();
    const other = await refused(
      send("POST", "/v1/runs", KEY_A, { driverInstanceId: a.instance.id, sessionId: runB.sessionId }),
      404,
      "session.not_found",
    );
    const missing = await refused(
      send("POST", "/v1/runs", KEY_A, { driverInstanceId: a.instance.id, sessionId: MISSING_ULID }),
      404,
      "session.not_found",
    );
    expect(other.error.message.replace(runB.sessionId, "<id>")).toBe(missing.error.message.replace(MISSING_ULID, "<id>"));
  });

  it("another tenant's empty session is neither joined nor deleted; its owner still does both", async () => {
    const { a, b, send, refused, runB } = await tenants();
    expect((await send("DELETE", `/v1/runs/${runB.runId}`, KEY_B)).status).toBe(204); // the session is now empty
    await refused(send("DELETE", `/v1/sessions/${runB.sessionId}`, KEY_A), 404, "session.not_found");
    await refused(
      send("POST", "/v1/runs", KEY_A, { driverInstanceId: a.instance.id, sessionId: runB.sessionId }),
      404,
      "session.not_found",
    );
    expect((await send("POST", "/v1/runs", KEY_B, { driverInstanceId: b.instance.id, sessionId: runB.sessionId })).status).toBe(201);
    expect((await send("DELETE", `/v1/runs/${runB.runId}`, KEY_B)).status).toBe(404);
    const again = await send("POST", "/v1/runs", TEST_SECRETS.adminKey, { driverInstanceId: a.instance.id, sessionId: runB.sessionId });
    expect(again.status).toBe(201); // an unrestricted key reaches every session
  });

  it("a session older than owners (no recorded key) is reached by no restricted key (fail closed)", async () => {
    const { f, a, send, refused } = await tenants();
    const legacy = await f.runtime.runs.createRun({ driverInstanceId: a.instance.id }); // in-process: no key, owner NULL
    expect(f.store.sqlite.prepare("SELECT created_by_key FROM sessions WHERE id = ?").get(legacy.sessionId)).toEqual({
      created_by_key: null,
    });
    await refused(send("DELETE", `/v1/sessions/${legacy.sessionId}`, KEY_A), 404, "session.not_found");
    await refused(
      send("POST", "/v1/runs", KEY_A, { driverInstanceId: a.instance.id, sessionId: legacy.sessionId }),
      404,
      "session.not_found",
    );
  });
});

describe("a restricted key gets the same 404 for what it may not reach as for what does not exist", () => {
  it.each([
    ["GET", (id: string) => `/v1/runs/${id}`, undefined],
    ["GET", (id: string) => `/v1/runs/${id}/events`, undefined],
    ["DELETE", (id: string) => `/v1/runs/${id}`, undefined],
    ["POST", (id: string) => `/v1/runs/${id}/tool-calls`, { serverId: "tracker", toolName: "createIssue", arguments: {} }],
    ["POST", (id: string) => `/v1/runs/${id}/tool-calls`, { not: "a valid body" }],
  ] as const)("%s %s", async (method, path, body) => {
    const { send, refused, runB } = await tenants();
    const other = await refused(send(method, path(runB.runId), KEY_A, body), 404, "run.not_found");
    const missing = await refused(send(method, path(MISSING_ULID), KEY_A, body), 404, "run.not_found");
    expect(JSON.stringify(other).replace(runB.runId, "<id>")).toBe(JSON.stringify(missing).replace(MISSING_ULID, "<id>"));
  });
});

describe("a repeated query parameter", () => {
  it("is refused with 400 request.invalid on every route that reads its query", async () => {
    const { b, app, send, refused, runB } = await tenants();
    const events = await refused(send("GET", `/v1/runs/${runB.runId}/events?afterSeq=10&afterSeq=-5`, KEY_B), 400, "request.invalid");
    expect(events.error.message).toBe('query parameter "afterSeq" is given more than once');
    await refused(
      requestJson(app, "GET", `/v1/drivers/commands/next?connectionId=${b.connectionId}&waitMs=0&waitMs=0`, undefined, b.token),
      400,
      "request.invalid",
    );
    await refused(
      requestJson(app, "GET", "/api/operator/effects?limit=10&limit=-5", undefined, TEST_SECRETS.operatorToken),
      400,
      "request.invalid",
    );
  });
});

describe("ULIDs are validated to their maximum", () => {
  it("refuses 8ZZZ… (400 request.invalid) and takes 7ZZZ… as an id that may exist (404)", async () => {
    const { send, refused } = await tenants();
    await refused(send("GET", `/v1/runs/8${"Z".repeat(25)}`, TEST_SECRETS.adminKey), 400, "request.invalid");
    await refused(send("GET", `/v1/runs/7${"Z".repeat(25)}`, TEST_SECRETS.adminKey), 404, "run.not_found");
  });
});

/**
 * Sends `bytes` of body to `url` over a raw socket as a client that writes its whole request before
 * it reads the answer (as many HTTP clients do: Python's, curl's default), as Content-Length or
 * chunked. Resolves the answer's status line and body, or the socket error that ended it.
 */
function sendLarge(url: string, bytes: number, chunked: boolean): Promise<{ status: number; code: string; connection: string } | string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let answer = "";
    let written = false;
    socket.pause(); // read nothing until the whole request is written
    socket.on("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? "error"));
    socket.on("data", (d: Buffer) => (answer += d.toString("latin1")));
    socket.on("end", () => {
      const [head = "", body = ""] = answer.split("\r\n\r\n");
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1] ?? 0);
      const connection = /\r\nconnection: *([^\r]*)/i.exec(head)?.[1] ?? "";
      const code = body ? ((JSON.parse(body.replace(/^[0-9a-f]+\r\n/, "").split("\r\n")[0]!) as any).error?.code ?? "") : "";
      resolve(written ? { status, code, connection } : "answered before the body was written");
    });
    const framing = chunked ? "transfer-encoding: chunked" : `content-length: ${bytes}`;
    socket.write(
      `POST /v1/drivers/register HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\n` +
        `authorization: Bearer ${TEST_SECRETS.enrollmentToken}\r\n${framing}\r\n\r\n`,
    );
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let left = bytes;
    const pump = () => {
      while (left > 0) {
        const n = Math.min(left, chunk.length);
        left -= n;
        const piece = chunked
          ? Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), chunk.subarray(0, n), Buffer.from("\r\n")])
          : chunk.subarray(0, n);
        if (!socket.write(piece)) return void socket.once("drain", pump);
      }
      socket.write(chunked ? "0\r\n\r\n" : "", () => {
        written = true;
        socket.resume();
      });
    };
    pump();
  });
}

describe("a body over the limit gets its 413 over a real socket", () => {
  it.each([
    ["declared by Content-Length", false],
    ["streamed chunked", true],
  ])(
    "%s: the client reads 413 request.too_large, never a reset; nothing is written",
    async (_how, chunked) => {
      dir = mkdtempSync(join(tmpdir(), "mosoo-413-"));
      api = await startApi(
        loadApiConfig({ MOSOO_DB_FILE: join(dir, "api.db"), MOSOO_PORT: "0", ...TEST_CREDENTIALS_ENV }),
        pino({ level: "silent" }),
        {
          sweep: false,
        },
      );
      const sqlite = (api.store as SqliteStore).sqlite; // MOSOO_DB_FILE: the SQLite store
      const before = dumpAllTables(sqlite);
      for (let i = 0; i < 3; i++) {
        const res = await sendLarge(`${api.url}/v1/drivers/register`, MAX_BODY_BYTES + 1024 * 1024, chunked);
        expect(res).toEqual({ status: 413, code: "request.too_large", connection: "close" });
      }
      expect(dumpAllTables(sqlite)).toBe(before);
    },
    60_000,
  );
});
