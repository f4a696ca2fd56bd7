// A request Node's HTTP parser refuses (oversized headers, garbage) gets the API's JSON error body and a closed connection, and the API stays up.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ApiErrorBodySchema } from "@mosoo/contracts";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadApiConfig } from "../src/config/api-config.js";
import { answerClientError } from "../src/entry/http/client-error.js";
import { startApi } from "../src/server.js";

let dir: string;
let api: Awaited<ReturnType<typeof startApi>>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mosoo-client-error-"));
  api = await startApi(loadApiConfig({ MOSOO_DB_FILE: join(dir, "api.db"), MOSOO_PORT: "0" }), pino({ level: "silent" }), { sweep: false });
}, 60_000);
afterAll(async () => {
  await api?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Sends `raw` on a new connection and resolves with everything the server wrote until it closed the connection. */
function exchange(raw: string): Promise<string> {
  const { port } = new URL(api.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1", () => socket.write(raw));
    let text = "";
    socket.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    socket.on("error", reject);
    socket.on("close", () => resolve(text));
  });
}

/** The status code and the parsed JSON error body of a raw HTTP/1.1 answer. */
function parse(answer: string): { status: number; body: unknown } {
  const [head = "", body = ""] = answer.split("\r\n\r\n");
  return { status: Number(head.split(" ")[1]), body: JSON.parse(body) };
}

describe("a request the HTTP parser refuses", () => {
  it("headers over 16 KiB: 431 request.headers_too_large with the API's error body", async () => {
    const answer = parse(await exchange(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`));
    expect(answer.status).toBe(431);
    expect(ApiErrorBodySchema.parse(answer.body).error.code).toBe("request.headers_too_large");
  });

  it("garbage instead of a request line: 400 request.invalid with the API's error body", async () => {
    const answer = parse(await exchange("\u0001\u0002 not http at all\r\n\r\n"));
    expect(answer.status).toBe(400);
    expect(ApiErrorBodySchema.parse(answer.body).error.code).toBe("request.invalid");
  });

  it("leaves the API serving the next request", async () => {
    const res = await fetch(`${api.url}/health`);
    expect(res.status).toBe(200);
  });
});

describe("a bad request on a connection whose response is still streaming", () => {
  it("cuts the connection without writing an answer into the middle of that response", async () => {
    let streaming!: () => void;
    const started = new Promise<void>((resolve) => (streaming = resolve));
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: part1\n\n");
      streaming();
    });
    server.on("clientError", answerClientError);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const received = await new Promise<string>((resolve, reject) => {
        const socket = connect(port, "127.0.0.1", () => socket.write("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"));
        let text = "";
        socket.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
        socket.on("error", reject);
        socket.on("close", () => resolve(text));
        void started.then(() => socket.write("\u0001\u0002 not http at all\r\n\r\n"));
      });
      expect(received).toContain("data: part1");
      expect(received.match(/HTTP\/1\.1 /g)).toHaveLength(1);
      expect(received).not.toContain("request.invalid");
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
