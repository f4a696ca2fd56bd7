// The shapes of one `mcp.execute` command's handling: the handler's dependencies, its steps' hand-overs, and what became of the command.
import type { DriverCommandEnvelope, KeyPlacement, McpExecuteCommandResult, RunError } from "@mosoo/contracts";
import type { Logger } from "pino";
import type { DriverCommandApi } from "./api-client.js";
import type { McpToolCaller } from "./mcp-connections.js";
import type { ResultOutboxRepository } from "./result-outbox.repository.js";

/** Dependencies of `handleMcpExecuteCommand` (mcp-execute.handler.ts): injected so tests can use fakes and in-memory MCP servers. */
export interface McpExecuteHandlerDeps {
  /** The command/effect part of the Driver protocol. */
  api: DriverCommandApi;
  /** The MCP side (one client per server). */
  mcp: McpToolCaller;
  /** The current connection (sent with every request). */
  connectionId: string;
  /** Logger, ideally already bound to `driverInstanceId`. */
  logger: Logger;
  /** Timeout of the one `tools/call`, ms. */
  toolTimeoutMs: number;
  /**
   * The Driver's monotonic clock (ms; default `performance.now()`), which measures the claim's
   * send-by deadline from the moment the claim request was sent (see `sendDeadlinePassed` of @mosoo/contracts). Tests pass a fake.
   */
  monotonicNowMs?: () => number;
  /**
   * Where a provider's result is written (durably, fsynced) before it is reported, and kept until the
   * API answered it (see `reportProviderResult` in result-report.service.ts). The Driver loop always passes one; without it (unit tests of
   * the ledger logic) the result is reported from memory only.
   */
  outbox?: ResultOutboxRepository | undefined;
  /** How long a provider's result is reported to an API that cannot take it, ms (default `DEFAULT_RESULT_REPORT_BUDGET_MS`). */
  resultReportBudgetMs?: number | undefined;
}

/**
 * What became of one command:
 * - `completed` / `failed`: the terminal update was sent; `updateOutcome` is the API's answer
 *   (`applied`, `duplicate`, or `rejected` when the API refused it, e.g. the command was already terminal);
 * - `skipped`: the API refused the `accepted` update (the command is no longer ours); nothing else was done.
 * `effectId` is `null` when no claim was made.
 */
export type McpExecuteOutcome =
  | { status: "completed"; commandId: string; effectId: string; result: McpExecuteCommandResult; updateOutcome: string }
  | { status: "failed"; commandId: string; effectId: string | null; error: RunError; updateOutcome: string }
  | { status: "skipped"; commandId: string; effectId: null; reason: string };

/** What the call needs once the server is known usable: the agent's arguments and where the server places the key. */
export interface PreparedCall {
  args: Record<string, unknown>;
  placement: KeyPlacement;
}

/** An `execute` claim in hand: everything the steps after the claim need, with the effect's logger. */
export interface ClaimedAttempt extends PreparedCall {
  deps: McpExecuteHandlerDeps;
  commandId: string;
  payload: DriverCommandEnvelope["payload"];
  effectId: string;
  attempt: number;
  idempotencyKey: string;
  sendWithinMs: number;
  /** Bound to `commandId` and `effectId`. */
  log: Logger;
  /** When the claim request was sent, on `monotonicNowMs` (ms). */
  claimSentAtMs: number;
  monotonicNowMs: () => number;
  /**
   * True once the claim's send-by deadline has passed (see `sendDeadlinePassed` of @mosoo/contracts): nothing may leave for the
   * provider after it. Checked before the call and again inside `callTool` right before the request is written
   * (`maySend`), after any reconnect of the MCP client, which can take longer than the deadline.
   */
  deadlinePassed: () => boolean;
}
