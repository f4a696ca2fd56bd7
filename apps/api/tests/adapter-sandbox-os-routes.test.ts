/**
 * Routes out of the sandbox the permission model does not check, through the REAL isolated host
 * (docs/DESIGN.md §4 "The sandbox is the operating system's"):
 * - file descriptors the API holds without close-on-exec (a shell's `20<secret.env`) are closed in the
 *   adapter's process before its code loads: reading or writing them fails, the secret is not read
 *   and the file is not written. The API is a child node process started with two such fds, 20 and 21
 *   (fds a process receives in `stdio` lack close-on-exec; Node opens its own with it, and marks its
 *   lowest few so at startup);
 * - a Unix-domain socket of the same OS user is refused (connecting by `net.connect` or by
 *   `http.request({socketPath})`, and listening on a path): the server sees no connection.
 */
import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SAMPLE_LOOKUP_REQUEST as REQUEST } from "./helpers/sample-lookup-request.js";
import { NOOP_LOGGER, type AdapterHost } from "@mosoo/effect-reconciliation/host";
import { createIsolatedAdapterHost } from "../src/modules/reconciliation/infrastructure/adapter-sandbox.host.js";

const API_DIR = fileURLToPath(new URL("..", import.meta.url));
const FAKE_API = fileURLToPath(new URL("./fixtures/sandbox/inherited-fds.host.ts", import.meta.url));
/** The fd the API inherited its secret file on (the next one: a log file opened for append); above the few Node marks close-on-exec at startup. */
const INHERITED_READ = 20;
const SECRET = "MOSOO_OPERATOR_TOKEN=inherited-fd-secret-3e8b1d";

/** An adapter module whose lookup runs `body` (async; `fs`, `net`, `http` in scope) and answers `still_unknown` with the reason it returns. */
function adapterSource(body: string): string {
  return `import * as fs from "node:fs";
import * as net from "node:net";
import * as http from "node:http";
const declaration = { id: "reach", version: "1.0.0", tools: ["createIssue"], retentionWindowMs: 86400000, keyFencing: { kind: "lookup_fences_key" } };
const attempt = async (act) => { try { return "done_" + String(await act()).replace(/[^a-z0-9]/gi, "").slice(0, 40); } catch (e) { return "refused_" + String(e.code ?? "error").toLowerCase(); } };
export const factory = { declaration, create: () => ({ declaration, async lookup() { return { outcome: "still_unknown", reasonCode: await (async () => { ${body} })() }; } }) };
`;
}

describe("routes the permission model does not check (real sandbox)", { timeout: 240_000 }, () => {
  const work = mkdtempSync(join(tmpdir(), "mosoo-os-routes-"));
  let host: AdapterHost;

  /** Writes adapter module `name` with lookup `body` in a folder of its own and answers its path. */
  function adapter(name: string, body: string): string {
    mkdirSync(join(work, name));
    const module = join(work, name, "adapter.mjs");
    writeFileSync(module, adapterSource(body));
    return module;
  }

  beforeAll(() => {
    host = createIsolatedAdapterHost({ heapMb: 32, cpuLimitMs: 10_000, maxProcesses: 1, bindTimeoutMs: 60_000, logger: NOOP_LOGGER });
  });

  afterAll(async () => {
    await host?.close();
    rmSync(work, { recursive: true, force: true });
  });

  it("fds the API inherited without close-on-exec are closed before adapter code runs: nothing read, nothing written", async () => {
    const secretFile = join(work, "secret.env");
    const logFile = join(work, "inherited.log");
    writeFileSync(secretFile, `${SECRET}\n`);
    writeFileSync(logFile, "");
    const module = adapter(
      "inherited-fds",
      `const INHERITED_READ = ${INHERITED_READ}, INHERITED_WRITE = ${INHERITED_READ + 1};
       const read = await attempt(() => { const b = Buffer.alloc(200); const n = fs.readSync(INHERITED_READ, b, 0, 200, 0); console.log("READ " + b.subarray(0, n).toString()); return "read" + n; });
       const written = await attempt(() => "wrote" + fs.writeSync(INHERITED_WRITE, "ADAPTER WAS HERE\\n"));
       return read + "_" + written;`,
    );
    const secretFd = openSync(secretFile, "r");
    const logFd = openSync(logFile, "a");
    let stdout = "";
    let stderr = "";
    const code = await new Promise<number | null>((resolve) => {
      const api = spawn(process.execPath, ["--import", "tsx", FAKE_API, module], {
        cwd: API_DIR,
        env: { ...process.env },
        stdio: ["ignore", "pipe", "pipe", ...Array<"ignore">(INHERITED_READ - 3).fill("ignore"), secretFd, logFd],
      });
      api.stdout!.on("data", (chunk) => (stdout += String(chunk)));
      api.stderr!.on("data", (chunk) => (stderr += String(chunk)));
      api.on("exit", (exit) => resolve(exit));
    });
    closeSync(secretFd);
    closeSync(logFd);
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    const answer = /^answer (.*)$/m.exec(stdout)?.[1];
    // both acts ran and failed on a closed fd
    expect(JSON.parse(answer ?? "null")).toEqual({ outcome: "still_unknown", reasonCode: "refused_ebadf_refused_ebadf" });
    expect(stdout).not.toContain("inherited-fd-secret");
    expect(readFileSync(logFile, "utf8")).toBe("");
  });

  describe("Unix-domain sockets", () => {
    let server: Server;
    let connections = 0;
    const socketPath = join(work, "peer.sock");

    beforeAll(async () => {
      server = createServer((socket) => {
        connections += 1;
        socket.end("PRIVILEGED\n");
      });
      await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    });

    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    const cases = [
      { name: "net.connect({path})", body: (p: string) => `net.connect({ path: ${p} })` },
      { name: "new net.Socket().connect(path)", body: (p: string) => `new net.Socket().connect(${p})` },
      { name: "http.request({socketPath})", body: (p: string) => `http.request({ socketPath: ${p}, path: "/" }).end()` },
    ];

    it.each(cases)("$name is refused and the server sees no connection", async ({ name, body }) => {
      const module = adapter(
        `unix-${name.replace(/[^a-z]/gi, "")}`,
        `return attempt(() => new Promise((resolve, reject) => { const s = ${body(JSON.stringify(socketPath))}; s.on("connect", () => resolve("connected")); s.on("error", reject); }));`,
      );
      const bound = await host.bind({ module, export: "factory" }, undefined);
      const answer = await bound.adapter.lookup(REQUEST, { signal: AbortSignal.timeout(20_000), logger: NOOP_LOGGER });
      expect(answer).toEqual({ outcome: "still_unknown", reasonCode: "refused_error" });
      expect(connections).toBe(0);
    });

    it("listening on a path is refused (no socket file is created)", async () => {
      const path = join(work, "squat.sock");
      const module = adapter(
        "unix-listen",
        `return attempt(() => new Promise((resolve, reject) => net.createServer().on("error", reject).listen(${JSON.stringify(path)}, () => resolve("listening"))));`,
      );
      const bound = await host.bind({ module, export: "factory" }, undefined);
      const answer = await bound.adapter.lookup(REQUEST, { signal: AbortSignal.timeout(20_000), logger: NOOP_LOGGER });
      expect(answer).toEqual({ outcome: "still_unknown", reasonCode: "refused_error" });
      expect(existsSync(path)).toBe(false);
    });
  });
});
