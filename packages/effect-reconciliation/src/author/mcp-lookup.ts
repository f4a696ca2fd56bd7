// MCP client helpers for adapter lookups: a fresh client per read with network retries, a typed lookup call, tool listing.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import pRetry from "p-retry";
import type { z } from "zod";

/** Name and version this package's MCP client reports in `initialize`. */
const CLIENT_INFO = { name: "mosoo-reconciler", version: "1.0.0" } as const;

/**
 * Network-level failures (`fetch failed`: a pooled keep-alive socket the server had just closed, a
 * reset) are retried this many times, 50–200 ms apart (p-retry), before the error reaches the
 * runtime. Only for READS: every caller of {@link withMcpClient} in this package lists tools or calls
 * a lookup tool, which the provider answers without writing anything.
 */
const NETWORK_RETRIES = 2;

/**
 * Runs `work` with a fresh MCP client connected to the Streamable HTTP endpoint `url`, closed
 * afterwards; `signal` aborts the connection and every request. A network-level failure (not a tool
 * error, not a malformed answer) starts over with a new client, up to {@link NETWORK_RETRIES} times,
 * so `work` must be a read.
 * @throws whatever the connection or `work` throws (the runtime turns it into `adapter_error`).
 */
export async function withMcpClient<T>(url: string, signal: AbortSignal, work: (client: Client) => Promise<T>): Promise<T> {
  const attempt = async (): Promise<T> => {
    const client = new Client(CLIENT_INFO);
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(url)), { signal });
      return await work(client);
    } finally {
      await client.close().catch(() => undefined);
    }
  };
  // p-retry retries network TypeErrors (`fetch failed`) and no other TypeError; nothing else is retried.
  return pRetry(attempt, {
    retries: NETWORK_RETRIES,
    minTimeout: 50,
    maxTimeout: 200,
    signal,
    shouldRetry: ({ error }) => error instanceof TypeError,
  });
}

/**
 * The typed MCP lookup helper: calls tool `tool` with `args` at `url` and parses the result's
 * `structuredContent` (or, without it, the JSON of its first text block) with `schema`.
 * @throws Error on a tool error (`isError`), or a `ZodError` when the answer fails `schema`.
 * @example const answer = await callLookupTool(url, "getOperation", { idempotencyKey: request.idempotencyKey }, AnswerSchema, signal);
 */
export async function callLookupTool<S extends z.ZodType>(
  url: string,
  tool: string,
  args: Record<string, unknown>,
  schema: S,
  signal: AbortSignal,
): Promise<z.infer<S>> {
  return withMcpClient(url, signal, async (client) => {
    const res = await client.callTool({ name: tool, arguments: args }, undefined, { signal });
    if (res.isError) throw new Error(`${tool} answered a tool error: ${JSON.stringify(res.content).slice(0, 200)}`);
    const first = Array.isArray(res.content) ? (res.content[0] as { type?: string; text?: string } | undefined) : undefined;
    const payload =
      res.structuredContent ?? (first?.type === "text" && typeof first.text === "string" ? JSON.parse(first.text) : undefined);
    return schema.parse(payload);
  });
}

/** Every tool of the server at `url` (`tools/list`, all pages; {@link listToolsOf} over a fresh client). */
export async function listMcpTools(url: string, signal: AbortSignal): Promise<Tool[]> {
  return withMcpClient(url, signal, (client) => listToolsOf(client, signal));
}

/**
 * Every tool of the server `client` is connected to: `tools/list`, following `nextCursor` until the
 * last page; `signal` aborts each request.
 * @throws whatever a `tools/list` request throws.
 */
export async function listToolsOf(client: Client, signal: AbortSignal): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor }, { signal });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}
