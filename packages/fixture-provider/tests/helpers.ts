import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { IDEMPOTENCY_KEY_META } from "@mosoo/contracts";
import { onTestFinished } from "vitest";

/** The package directory (`packages/fixture-provider`). */
export const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * A fresh SQLite path in a new temp directory (the file and its parent do not exist yet). Call it
 * inside a test: the directory is removed when that test finishes.
 */
export function tempDbFile(): string {
  const dir = mkdtempSync(join(tmpdir(), "fixture-provider-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, "nested", "provider.db");
}

/** Finds `node_modules/.bin/tsx` in the package directory or its nearest ancestor that has one. */
export function resolveTsx(): string {
  for (let dir = PACKAGE_DIR; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", ".bin", "tsx");
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`no node_modules/.bin/tsx above ${PACKAGE_DIR}`);
  }
}

/** An MCP client connected over Streamable HTTP to `url`. */
export async function connectHttp(url: string): Promise<Client> {
  const client = new Client({ name: "fixture-provider-tests", version: "0.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

/** Calls `createIssue`, with `_meta[IDEMPOTENCY_KEY_META] = key` when a key is given. */
export async function callCreateIssue(
  client: Client,
  args: Record<string, unknown>,
  key?: string,
  options?: { timeout?: number },
): Promise<CallToolResult> {
  const result = await client.callTool(
    { name: "createIssue", arguments: args, ...(key === undefined ? {} : { _meta: { [IDEMPOTENCY_KEY_META]: key } }) },
    undefined,
    options,
  );
  return result as CallToolResult;
}

/** Calls `getOperation` for `key`. */
export async function callGetOperation(client: Client, key: string): Promise<CallToolResult> {
  return (await client.callTool({ name: "getOperation", arguments: { idempotencyKey: key } })) as CallToolResult;
}

/** The text of the first content block (throws if it is not a text block). */
export function firstText(result: CallToolResult): string {
  const block = result.content[0];
  if (block?.type !== "text") throw new Error(`expected a text block, got ${JSON.stringify(result.content)}`);
  return block.text;
}

/** Polls `predicate` every 10 ms until it holds; throws after `timeoutMs`. */
export async function waitFor(predicate: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A `main.ts` process in HTTP mode, once its ready line has been read. */
export interface SpawnedProvider {
  child: ChildProcess;
  readyLine: string;
  ready: { event: string; url: string; controlUrl: string; pid: number };
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
}

/** Starts `tsx src/main.ts <args>` from the package directory and waits for its first stdout line. */
export async function spawnMain(args: string[]): Promise<SpawnedProvider> {
  const child = spawn(resolveTsx(), ["src/main.ts", ...args], { cwd: PACKAGE_DIR, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once("exit", (code, signal) => done({ code, signal })),
  );
  const lines = createInterface({ input: child.stdout! });
  const readyLine = await new Promise<string>((done, fail) => {
    lines.once("line", done);
    void exited.then(({ code }) => fail(new Error(`main.ts exited (${code}) before ready: ${stderr}`)));
  });
  return { child, readyLine, ready: JSON.parse(readyLine), exited, stderr: () => stderr };
}
