// The Driver's MCP clients, one per configured server, connected lazily, and where each call carries its idempotency key.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Logger } from "pino";
import { DEFAULT_KEY_PLACEMENT, type KeyPlacement } from "@mosoo/contracts";
import type { McpConfig, McpServerConfig } from "./driver-config.contract.js";
import { callToolAsTask, listTaskTools } from "./mcp-task-call.js";

/** The `tools/call` parameters the Driver sends: tool name, parsed arguments, and `_meta` (the idempotency key). */
export interface McpToolCallRequest {
  name: string;
  arguments: Record<string, unknown>;
  _meta: Record<string, unknown>;
}

/** Options of one tool call. */
export interface McpToolCallOptions {
  /** Timeout of the call in ms; on expiry the call throws (the write's fate is then unknown). */
  timeoutMs: number;
  /**
   * Asked synchronously right before the request is written to the transport, after any
   * (re)connect: `false` means "do not send" and the call throws {@link SendRefusedError} without
   * sending anything (docs/DESIGN.md §3 rule 12: a reconnect can take longer than the send-by deadline).
   */
  maySend?: () => boolean;
  /**
   * When given and the server lets this tool be called as an MCP task (MCP 2025-11-25 "Tasks"), the
   * call is sent task-augmented and this is called once with the provider's task id, and awaited,
   * before the Driver waits for the task (`callToolAsTask`). Otherwise the call is a plain one.
   */
  onTaskCreated?: (taskId: string) => Promise<void>;
}

/** The call was not sent: `maySend` answered false once the client was ready (nothing reached the provider). */
export class SendRefusedError extends Error {
  override readonly name = "SendRefusedError";
  constructor(readonly serverId: string) {
    super(`tools/call to ${serverId} not sent: the send-by deadline passed while connecting`);
  }
}

/**
 * What the command handler needs from the MCP side. Implemented by {@link McpConnections}.
 */
export interface McpToolCaller {
  /** True when `serverId` is in the Driver's MCP config. */
  hasServer(serverId: string): boolean;
  /**
   * Connects to `serverId` if not connected yet (the provider is not called).
   * @throws McpServerUnavailableError when the server is not configured or the connection fails.
   */
  ensureConnected(serverId: string): Promise<void>;
  /**
   * Sends one `tools/call` and returns the raw MCP result (`isError: true` results included).
   * Never retries. Throws {@link SendRefusedError} when `options.maySend` refused (nothing was sent);
   * throws anything else when the call fails or times out: the caller must treat the write as unknown.
   */
  callTool(serverId: string, request: McpToolCallRequest, options: McpToolCallOptions): Promise<unknown>;
  /** Where `serverId` wants the idempotency key (its config's `idempotencyKey`); absent means the default `_meta` name. */
  keyPlacement?(serverId: string): KeyPlacement;
}

/**
 * An MCP server could not be used before any tool call was sent: not in the config
 * (`reason: "not_configured"`) or the connection/initialize failed (`reason: "connect_failed"`).
 */
export class McpServerUnavailableError extends Error {
  override readonly name = "McpServerUnavailableError";
  constructor(
    readonly serverId: string,
    readonly reason: "not_configured" | "connect_failed",
    message: string,
  ) {
    super(message);
  }
}

/** Builds the SDK transport of one configured server. */
export type McpTransportFactory = (serverId: string, config: McpServerConfig) => Transport;

/** Options of {@link McpConnections}. */
export interface McpConnectionsOptions {
  /** Transport factory; defaults to {@link createMcpTransport} (Streamable HTTP / stdio). */
  createTransport?: McpTransportFactory | undefined;
  /** Timeout of connect + `initialize`, ms; default 30 000. */
  connectTimeoutMs?: number | undefined;
  /** Logs `mcp.connected` / `mcp.disconnected`. */
  logger?: Logger | undefined;
  /** Client identity sent in `initialize`; default `{name: "mosoo-driver", version: "0.1.0"}`. */
  clientInfo?: { name: string; version: string } | undefined;
}

/**
 * The SDK transport of a configured server: `StreamableHTTPClientTransport` for `http` (with the
 * configured headers), `StdioClientTransport` for `stdio` (child stderr is inherited).
 */
export function createMcpTransport(_serverId: string, config: McpServerConfig): Transport {
  if (config.type === "http") {
    return new StreamableHTTPClientTransport(
      new URL(config.url),
      config.headers ? { requestInit: { headers: config.headers } } : undefined,
    );
  }
  return new StdioClientTransport({
    command: config.command,
    args: config.args,
    ...(config.env ? { env: config.env } : {}),
    ...(config.cwd ? { cwd: config.cwd } : {}),
    stderr: "inherit",
  });
}

/**
 * One MCP `Client` per configured server, connected lazily on first use and dropped when its
 * transport closes (the next use connects again). Concurrent first uses share one connect.
 */
export class McpConnections implements McpToolCaller {
  private readonly clients = new Map<string, Promise<Client>>();
  /**
   * Per connected client: the tools its server lets be called as tasks (empty without the tasks
   * capability), as last listed: at connect, then again on each `notifications/tools/list_changed`
   * (a pending refresh is awaited by the next call, so a call never uses a list the server said is stale).
   */
  private readonly taskTools = new WeakMap<Client, Promise<ReadonlySet<string>>>();
  private readonly createTransport: McpTransportFactory;
  private readonly connectTimeoutMs: number;

  constructor(
    private readonly config: McpConfig,
    private readonly options: McpConnectionsOptions = {},
  ) {
    this.createTransport = options.createTransport ?? createMcpTransport;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 30_000;
  }

  hasServer(serverId: string): boolean {
    return Object.hasOwn(this.config.servers, serverId);
  }

  async ensureConnected(serverId: string): Promise<void> {
    await this.client(serverId);
  }

  keyPlacement(serverId: string): KeyPlacement {
    return (this.hasServer(serverId) ? this.config.servers[serverId]?.idempotencyKey : undefined) ?? DEFAULT_KEY_PLACEMENT;
  }

  async callTool(serverId: string, request: McpToolCallRequest, options: McpToolCallOptions): Promise<unknown> {
    const client = await this.client(serverId);
    const taskTools = options.onTaskCreated ? await this.taskTools.get(client) : undefined;
    // Nothing asynchronous between this check and the SDK writing the request.
    if (options.maySend && !options.maySend()) throw new SendRefusedError(serverId);
    if (options.onTaskCreated && taskTools?.has(request.name))
      return callToolAsTask(client, request, { timeoutMs: options.timeoutMs, onTaskCreated: options.onTaskCreated });
    return client.callTool(request, undefined, { timeout: options.timeoutMs, maxTotalTimeout: options.timeoutMs });
  }

  /** Closes every open client (and stops stdio children). Errors while closing are ignored. */
  async closeAll(): Promise<void> {
    const pending = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(
      pending.map(async (clientPromise) => {
        try {
          await (await clientPromise).close();
        } catch {
          // already closed or never connected
        }
      }),
    );
  }

  private client(serverId: string): Promise<Client> {
    const config = this.hasServer(serverId) ? this.config.servers[serverId] : undefined;
    if (!config) {
      return Promise.reject(
        new McpServerUnavailableError(serverId, "not_configured", `MCP server ${serverId} is not in the Driver's MCP config`),
      );
    }
    const existing = this.clients.get(serverId);
    if (existing) return existing;
    const connecting = this.connect(serverId, config);
    this.clients.set(serverId, connecting);
    connecting.catch(() => {
      if (this.clients.get(serverId) === connecting) this.clients.delete(serverId);
    });
    return connecting;
  }

  private async connect(serverId: string, config: McpServerConfig): Promise<Client> {
    // The SDK calls onChanged on each notifications/tools/list_changed of a server that declares
    // `tools.listChanged` (no debounce timer; no SDK listing: listTaskTools reads every page itself).
    const client: Client = new Client(this.options.clientInfo ?? { name: "mosoo-driver", version: "0.1.0" }, {
      listChanged: { tools: { autoRefresh: false, debounceMs: 0, onChanged: () => this.refreshTaskTools(serverId, client) } },
    });
    try {
      const transport = this.createTransport(serverId, config);
      await client.connect(transport, { timeout: this.connectTimeoutMs });
      const listed = listTaskTools(client, this.connectTimeoutMs);
      this.taskTools.set(client, listed);
      await listed;
    } catch (error) {
      await client.close().catch(() => undefined);
      throw new McpServerUnavailableError(
        serverId,
        "connect_failed",
        `cannot connect to MCP server ${serverId}: ${(error as Error).message}`,
      );
    }
    const current = this.clients.get(serverId);
    client.onclose = () => {
      if (this.clients.get(serverId) === current) this.clients.delete(serverId);
      this.options.logger?.info({ serverId }, "mcp.disconnected");
    };
    this.options.logger?.info({ serverId, transport: config.type }, "mcp.connected");
    return client;
  }

  /**
   * Lists `client`'s task tools again after its server said its tool list changed; calls made from
   * now on await this listing. When it fails, no tool is called as a task on this connection until
   * the next change or reconnect: a plain call is always allowed, while a task-augmented call to a
   * tool that no longer supports tasks may run the write and answer a result the Driver cannot read.
   * Logs `mcp.task_tools_refreshed` (`taskTools`: the names) or `mcp.task_tools_refresh_failed`.
   */
  private refreshTaskTools(serverId: string, client: Client): void {
    const refreshed = listTaskTools(client, this.connectTimeoutMs).then(
      (names) => {
        this.options.logger?.info({ serverId, taskTools: [...names] }, "mcp.task_tools_refreshed");
        return names;
      },
      (error: unknown) => {
        this.options.logger?.warn({ serverId, err: error }, "mcp.task_tools_refresh_failed");
        return new Set<string>();
      },
    );
    this.taskTools.set(client, refreshed);
  }
}

/**
 * The `tools/call` arguments and `_meta` carrying `idempotencyKey` where `placement` says (docs/DESIGN.md
 * §4): in `_meta[placement.name]`, or as the argument `placement.name` added to a
 * copy of the agent's `args` (overriding an agent value of that name). The request fingerprint is
 * computed by the API over the agent's own arguments, never over these.
 */
export function placeIdempotencyKey(
  placement: KeyPlacement,
  args: Record<string, unknown>,
  idempotencyKey: string,
): Pick<McpToolCallRequest, "arguments" | "_meta"> {
  return placement.in === "meta"
    ? { arguments: args, _meta: { [placement.name]: idempotencyKey } }
    : { arguments: { ...args, [placement.name]: idempotencyKey }, _meta: {} };
}
