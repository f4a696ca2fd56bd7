// Builds the fixture provider's MCP server (`createIssue`, `closeIssue`, `getOperation`) and its idempotency convention advertisement.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { MAX_DELAY_BEFORE_COMMIT_MS } from "./fixture-faults.contract.js";
import { CLOSE_ISSUE_TOOL, CloseIssueArgsSchema, ClosedIssueSchema } from "./close-issue.contract.js";
import {
  CREATE_ISSUE_TOOL,
  CreateIssueArgsSchema,
  CreatedIssueSchema,
  GET_OPERATION_TOOL,
  MAX_IDEMPOTENCY_KEY_LENGTH,
} from "./create-issue.contract.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { ToolCallback } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { ToolTaskHandler } from "@modelcontextprotocol/sdk/experimental/tasks/interfaces.js";
import type { FixtureProviderService } from "./fixture-provider.service.js";
import { GetOperationArgsSchema } from "./get-operation.contract.js";

/** Name and version the fixture MCP server reports in `initialize`. */
export const FIXTURE_SERVER_INFO = { name: "mosoo-fixture-provider", version: "0.1.0" } as const;

/**
 * Builds an MCP server (official SDK `McpServer`) exposing `createIssue`, `closeIssue` and `getOperation`, backed
 * by `provider`. Connect it to any transport: `StdioServerTransport`, or one stateless
 * `WebStandardStreamableHTTPServerTransport` per HTTP request (the HTTP server does that). Many
 * servers may share one provider.
 */
export function createFixtureMcpServer(provider: FixtureProviderService): McpServer {
  const server = new McpServer(
    FIXTURE_SERVER_INFO,
    provider.taskSupport
      ? { taskStore: provider.tasks, capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } } }
      : {},
  );
  const placement = provider.keyPlacement;
  const keyWhere = placement.in === "meta" ? `_meta["${placement.name}"]` : `the argument "${placement.name}"`;
  // With the key as an argument, the tools accept it next to their own arguments.
  // (Typed as the tool's own schema: the service strips the key argument before it reads the rest.)
  const withKey = <T extends z.ZodObject>(schema: T): T =>
    placement.in === "argument"
      ? (schema.extend({ [placement.name]: z.string().min(1).max(MAX_IDEMPOTENCY_KEY_LENGTH).optional() }) as unknown as T)
      : schema;
  const advertised = provider.advertiseIdempotency
    ? { _meta: { [IDEMPOTENCY_CONVENTION_META]: fixtureIdempotencyAdvertisement(provider) } }
    : {};
  const createIssue = registerWriteTool(
    server,
    provider,
    CREATE_ISSUE_TOOL,
    {
      title: "Create an issue",
      description:
        `Creates an issue. Requires an idempotency key in ${keyWhere}: the same key with the same ` +
        "arguments returns the recorded issue without a second write; with other arguments it is refused (idempotency_conflict).",
      inputSchema: withKey(CreateIssueArgsSchema),
      outputSchema: CreatedIssueSchema,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      ...advertised,
    },
    (args, meta) => provider.createIssue(args as z.infer<typeof CreateIssueArgsSchema>, meta),
  );
  const closeIssue = registerWriteTool(
    server,
    provider,
    CLOSE_ISSUE_TOOL,
    {
      title: "Close an issue",
      description:
        `Closes an issue (the compensating action of createIssue). Requires its own idempotency key in ${keyWhere}, ` +
        "with the same replay, conflict and fence rules as createIssue; getOperation reports it under that key.",
      inputSchema: withKey(CloseIssueArgsSchema),
      outputSchema: ClosedIssueSchema,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      ...advertised,
    },
    (args, meta) => provider.closeIssue(args as z.infer<typeof CloseIssueArgsSchema>, meta),
  );
  server.registerTool(
    GET_OPERATION_TOOL,
    {
      title: "Look up a write by idempotency key",
      description:
        "Reports whether a createIssue or closeIssue committed under this idempotency key, with its request fingerprint and exact result. " +
        "When the provider fences on lookup miss, a miss makes the key unusable forever (fenced: true).",
      inputSchema: GetOperationArgsSchema,
      annotations: { readOnlyHint: false, idempotentHint: true, openWorldHint: false },
    },
    (args) => provider.getOperation(args.idempotencyKey),
  );
  if (createIssue && closeIssue) followTaskSupportSwitch(server, provider, [createIssue, closeIssue]);
  return server;
}

/** The configuration of a write tool, as `registerTool` takes it. */
type WriteToolConfig = {
  title: string;
  description: string;
  inputSchema: z.ZodObject;
  outputSchema: z.ZodObject;
  annotations: { readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean };
  _meta?: Record<string, unknown>;
};

/**
 * Registers one write tool. Without task support, a plain tool. With it (`provider.taskSupport`), a task
 * tool (`execution.taskSupport`): a task-augmented call creates a task in the provider's shared store
 * (the request's `_meta`, the idempotency key included, goes to the write), answers it at once, and the
 * write runs in the background until it settles the task with its result (`completed`, or `failed` for a
 * tool error). The write's faults apply as to a plain call: a held call keeps its task `working`.
 * @returns for a task tool, the {@link TaskSupportSwitch} that serves it as a plain tool (declared
 *   `forbidden`, every call answered with its result) or as a task tool again; else undefined.
 */
function registerWriteTool(
  server: McpServer,
  provider: FixtureProviderService,
  name: string,
  config: WriteToolConfig,
  write: (args: unknown, meta: Record<string, unknown> | undefined) => Promise<CallToolResult>,
): TaskSupportSwitch | undefined {
  const plain: ToolCallback<z.ZodObject> = (args, extra) => write(args, extra._meta);
  const taskSupport = provider.taskSupport;
  if (!taskSupport) {
    server.registerTool(name, config, plain);
    return undefined;
  }
  const asTask: ToolTaskHandler<z.ZodObject> = {
    createTask: async (args, extra) => {
      const task = await extra.taskStore.createTask({ ttl: extra.taskRequestedTtl ?? null });
      // A write that throws (the provider shutting down) leaves its task `working`: its fate is not known.
      void write(args, extra._meta).then(
        (result) => provider.tasks.settle(task.taskId, result),
        () => undefined,
      );
      return { task };
    },
    getTask: (_args, extra) => extra.taskStore.getTask(extra.taskId),
    getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult,
  };
  const tool = server.experimental.tasks.registerToolTask(name, { ...config, execution: { taskSupport } }, asTask);
  return (withdraw) => {
    // The SDK dispatches on these two fields at each call (a plain handler's result is returned as is, task or not).
    tool.execution = { taskSupport: withdraw ? "forbidden" : taskSupport };
    tool.handler = withdraw ? plain : asTask;
  };
}

/** Serves a write tool registered with task support as a plain tool (`true`) or as its task tool again (`false`). */
type TaskSupportSwitch = (withdraw: boolean) => void;

/**
 * Applies the `withdrawTaskSupport` switch to `server`'s write tools now, then on every change of it
 * until the server closes, sending one `notifications/tools/list_changed` per change (when connected).
 */
function followTaskSupportSwitch(server: McpServer, provider: FixtureProviderService, switches: TaskSupportSwitch[]): void {
  let withdrawn = provider.faults().withdrawTaskSupport;
  for (const apply of switches) apply(withdrawn);
  const unsubscribe = provider.onFaultsChanged((faults) => {
    if (faults.withdrawTaskSupport === withdrawn) return;
    withdrawn = faults.withdrawTaskSupport;
    for (const apply of switches) apply(withdrawn);
    server.sendToolListChanged();
  });
  const previousOnClose = server.server.onclose;
  server.server.onclose = () => {
    unsubscribe();
    previousOnClose?.();
  };
}

/** The `_meta` name of the zero-code idempotency convention (`@mosoo/effect-reconciliation`, `IDEMPOTENCY_CONVENTION_META`). */
export const IDEMPOTENCY_CONVENTION_META = "io.mosoo/idempotency";

/**
 * What the fixture provider advertises under `_meta["io.mosoo/idempotency"]` of its write tools
 * when `advertiseIdempotency` is on (the convention, README of `@mosoo/effect-reconciliation`):
 * lookup tool `getOperation` (argument `idempotencyKey`), retention 30 days (it keeps every key as
 * long as its file lives), `lookup_fences_key` when started with `--fence-on-lookup-miss`, else
 * `max_in_flight` covering its longest commit delay (`MAX_DELAY_BEFORE_COMMIT_MS` + 5 s), and its key placement.
 */
export function fixtureIdempotencyAdvertisement(provider: Pick<FixtureProviderService, "fenceOnLookupMiss" | "keyPlacement">) {
  return {
    version: 1,
    lookupTool: GET_OPERATION_TOOL,
    lookupKeyArgument: "idempotencyKey",
    retentionMs: 30 * 24 * 60 * 60 * 1000,
    fencing: provider.fenceOnLookupMiss
      ? { kind: "lookup_fences_key" }
      : { kind: "max_in_flight", maxInFlightMs: MAX_DELAY_BEFORE_COMMIT_MS + 5_000 },
    keyPlacement: provider.keyPlacement,
  };
}
