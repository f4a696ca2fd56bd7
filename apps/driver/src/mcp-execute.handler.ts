// Runs one `mcp.execute` command through the ledger: accept, claim, call the MCP tool once, report the result.
import {
  effectNotExecutedError,
  effectUnknownError,
  DEFAULT_KEY_PLACEMENT,
  fingerprintArguments,
  McpToolResultSchema,
  sendDeadlinePassed,
  toMcpExecuteCommandResult,
  type CommandUpdateRequest,
  type DriverCommandEnvelope,
  type McpExecuteCommandResult,
  type RunError,
  findJsonProblem,
  formatJsonProblem,
  isWellFormedText,
  MAX_PROVIDER_RECEIPT_BYTES,
  McpTaskIdSchema,
} from "@mosoo/contracts";
import type { Logger } from "pino";
import { currentTraceContext, withSpan } from "@mosoo/telemetry";
import type { DriverCommandApi } from "./api-client.js";
import { McpServerUnavailableError, placeIdempotencyKey, SendRefusedError, type McpToolCaller } from "./mcp-connections.js";
import type { PendingResult, ResultOutboxRepository } from "./result-outbox.repository.js";
import { reportProviderResult } from "./result-report.service.js";

/** Largest `outputText` the contracts accept (1 MiB, in UTF-16 code units as zod counts them). */
export const MAX_OUTPUT_TEXT_LENGTH = 1024 * 1024;
/** Largest receipt (`result._meta` as JSON) the API keeps: `MAX_PROVIDER_RECEIPT_BYTES` of @mosoo/contracts (16 KiB). */
export const MAX_RECEIPT_BYTES = MAX_PROVIDER_RECEIPT_BYTES;

/** Dependencies of {@link handleMcpExecuteCommand}: injected so tests can use fakes and in-memory MCP servers. */
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
   * send-by deadline from the moment the claim request was sent (see {@link sendDeadlinePassed}). Tests pass a fake.
   */
  monotonicNowMs?: () => number;
  /**
   * Where a provider's result is written (durably, fsynced) before it is reported, and kept until the
   * API answered it (see {@link reportProviderResult}). The Driver loop always passes one; without it (unit tests of
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

/**
 * The command error for an MCP server the Driver cannot use before calling it (`mcp.server_unavailable`).
 * The provider never ran: the effect stays `intent`. `details` carry `serverId` and `reason`.
 * @param retryable false when the server is not configured (retrying cannot help), true when the connect failed.
 */
export function serverUnavailableError(serverId: string, reason: string, message: string, retryable: boolean): RunError {
  return { code: "mcp.server_unavailable", message: truncate(message, 2000), retryable, details: { serverId, reason } };
}

/**
 * Runs one `mcp.execute` command against the ledger:
 * 1. `queued`/`delivered` → `commandUpdate accepted` (an `accepted` redelivery skips it);
 * 2. the MCP server must be configured and connectable, else `failed` `mcp.server_unavailable` WITHOUT a claim;
 *    so must the key's place: a server whose config places the key in a tool argument the call
 *    already has fails `mcp.server_unavailable` (reason `key_argument_conflict`, not retryable) WITHOUT a claim;
 * 3. `effectClaim` → `execute`: if the claim's send-by deadline (`sendWithinMs`, measured on
 *    `monotonicNowMs` from just before the claim request was sent) has passed, NO `tools/call`:
 *    `effectDeadlineMissed` (the API settles the effect `not_executed`) then `failed`
 *    `external_effect.not_executed` (see {@link sendDeadlinePassed}). Otherwise one `tools/call` with
 *    the idempotency key where the server's config places it (default
 *    `_meta["io.mosoo/idempotency-key"]`, see `placeIdempotencyKey`) and, when traced, the trace context
 *    in `_meta.traceparent` / `_meta.tracestate`; task-augmented when the server lets the tool be called
 *    as an MCP task, its task id then reported (`effectTaskCreated`) before the Driver waits for the task
 *    (see `decideTaskHandle` in effect-lifecycle.machine.ts); its result is written to the
 *    outbox (`deps.outbox`, fsynced) before it is sent, then reported by `reportProviderResult`
 *    (`effectComplete`, retried for `deps.resultReportBudgetMs`; late evidence, `effectLateResult`,
 *    see `decideLateEvidence` in effect-lifecycle.machine.ts, when the effect was fenced meanwhile) and only after the API's answer
 *    `commandUpdate completed`, or the command ends as the ledger then says. If the call throws, `effectMarkUnknown` then `failed`
 *    `external_effect.unknown`. `completed` / `unknown` / `not_executed` claims never call the provider.
 * The provider is called at most once per invocation and never retried.
 * @throws ApiRequestError / ApiUnavailableError / ApiContractError when the API cannot be told
 *   (the command is then left for redelivery after a reconnect; a fresh claim fences it as `unknown`);
 *   for a provider's result only once its report budget ran out (`effect.result_report_given_up`).
 */
export async function handleMcpExecuteCommand(envelope: DriverCommandEnvelope, deps: McpExecuteHandlerDeps): Promise<McpExecuteOutcome> {
  const { api, mcp, connectionId } = deps;
  const { commandId, payload } = envelope;
  const log = deps.logger.child({ commandId, effectId: null });
  log.info(
    {
      seq: envelope.seq,
      runId: envelope.runId,
      status: envelope.status,
      redelivery: envelope.redelivery,
      serverId: payload.serverId,
      toolName: payload.toolName,
      toolCallId: payload.toolCallId,
    },
    "command.received",
  );

  if (envelope.status === "queued" || envelope.status === "delivered") {
    const accepted = await api.call("commandUpdate", { params: { commandId }, body: { connectionId, status: "accepted" } });
    if (accepted.outcome === "rejected") {
      log.warn({ commandStatus: accepted.status, reason: accepted.reason }, "command.skipped");
      return { status: "skipped", commandId, effectId: null, reason: accepted.reason ?? `command is ${accepted.status}` };
    }
    log.debug({ outcome: accepted.outcome }, "command.accepted");
  } else if (envelope.status !== "accepted") {
    log.warn({ commandStatus: envelope.status }, "command.skipped");
    return { status: "skipped", commandId, effectId: null, reason: `command is ${envelope.status}` };
  }

  // Before the claim: a server we cannot reach must not turn the effect `executing`.
  try {
    await mcp.ensureConnected(payload.serverId);
  } catch (error) {
    const unavailable =
      error instanceof McpServerUnavailableError
        ? error
        : new McpServerUnavailableError(payload.serverId, "connect_failed", (error as Error).message);
    log.warn({ serverId: payload.serverId, reason: unavailable.reason, err: unavailable.message }, "mcp.server_unavailable");
    const runError = serverUnavailableError(
      payload.serverId,
      unavailable.reason,
      unavailable.message,
      unavailable.reason === "connect_failed",
    );
    return fail(deps, log, commandId, null, runError);
  }
  const args = JSON.parse(payload.argumentsJson) as Record<string, unknown>;
  // The key must never overwrite, or be overwritten by, one of the agent's own arguments: refused
  // before the claim, so nothing is dispatched and the effect stays `intent`.
  const placement = mcp.keyPlacement?.(payload.serverId) ?? DEFAULT_KEY_PLACEMENT;
  if (placement.in === "argument" && Object.hasOwn(args, placement.name)) {
    const message = `the tool call already has an argument "${placement.name}", where this server's config places the idempotency key; rename the argument or the key's place (idempotencyKey.name)`;
    log.warn({ serverId: payload.serverId, argument: placement.name }, "mcp.key_argument_conflict");
    return fail(deps, log, commandId, null, serverUnavailableError(payload.serverId, "key_argument_conflict", message, false));
  }

  const monotonicNowMs = deps.monotonicNowMs ?? (() => performance.now());
  const claimSentAtMs = monotonicNowMs();
  const claim = await api.call("effectClaim", { body: { connectionId, commandId } });
  const effectLog = deps.logger.child({ commandId, effectId: claim.effectId });
  effectLog.info({ kind: claim.kind, ...(claim.kind === "execute" ? { attempt: claim.attempt } : {}) }, "effect.claimed");

  switch (claim.kind) {
    case "completed":
      return complete(deps, effectLog, commandId, claim.effectId, claim.result);
    case "unknown":
      return fail(deps, effectLog, commandId, claim.effectId, effectUnknownError(claim.effectId));
    case "not_executed":
      return fail(deps, effectLog, commandId, claim.effectId, effectNotExecutedError(claim.effectId));
    case "execute":
      break;
  }

  const { effectId, attempt, idempotencyKey } = claim;
  // See {@link sendDeadlinePassed}: nothing may leave for the provider after the send-by deadline. Checked
  // here and again inside `callTool` right before the request is written (`maySend`), after any
  // reconnect of the MCP client, which can take longer than the deadline.
  const deadlinePassed = () => sendDeadlinePassed(claimSentAtMs, monotonicNowMs(), claim.sendWithinMs);
  const reportMissedDeadline = async () => {
    const elapsedMs = Math.max(0, Math.round(monotonicNowMs() - claimSentAtMs));
    effectLog.warn({ attempt, elapsedMs, sendWithinMs: claim.sendWithinMs }, "effect.send_deadline_missed");
    const reported = await api.call("effectDeadlineMissed", { params: { effectId }, body: { connectionId, attempt, elapsedMs } });
    effectLog.info({ attempt, outcome: reported.outcome, effectStatus: reported.status }, "effect.deadline_missed_reported");
    const runError =
      reported.status === "not_executed"
        ? effectNotExecutedError(effectId, { reason: "send_deadline_missed" })
        : effectUnknownError(effectId, { effectStatus: reported.status });
    return fail(deps, effectLog, commandId, effectId, runError);
  };
  if (deadlinePassed()) return reportMissedDeadline();
  effectLog.info({ attempt, serverId: payload.serverId, toolName: payload.toolName }, "tool.called");
  effectLog.debug({ attempt, idempotencyKey }, "tool.called_with_key"); // keys only at debug
  // MCP tasks (the set-once handle: `decideTaskHandle` in effect-lifecycle.machine.ts): a task-capable tool answers a task id first; it is stored on the effect
  // before the Driver waits, so a crash after this point leaves a handle recovery can ask about. A
  // report the API cannot take is logged and the wait goes on: the result, when it comes, is the
  // better evidence (outbox, §11), and without the handle a crash ends on the fence as before.
  const reportTaskHandle = async (taskId: string): Promise<void> => {
    if (!McpTaskIdSchema.safeParse(taskId).success) {
      effectLog.warn({ attempt, length: taskId.length }, "effect.task_id_unstorable");
      return;
    }
    try {
      const stored = await api.call("effectTaskCreated", { params: { effectId }, body: { connectionId, attempt, taskId } });
      effectLog.info({ attempt, taskId, outcome: stored.outcome, effectStatus: stored.status }, "effect.task_handle_stored");
    } catch (error) {
      effectLog.error({ attempt, taskId, err: (error as Error).message }, "effect.task_report_failed");
    }
  };
  const startedAt = performance.now();
  let raw: unknown;
  try {
    raw = await withSpan(
      "mcp.tools_call",
      {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": payload.toolName,
        "mosoo.server.id": payload.serverId,
        "mosoo.effect.attempt": attempt,
      },
      () => {
        const placed = placeIdempotencyKey(placement, args, idempotencyKey);
        // The trace goes on to the MCP server as `_meta.traceparent` / `_meta.tracestate` (this span is
        // its parent); the idempotency key is spread last, so a key placed under one of those names wins.
        const _meta = { ...currentTraceContext(), ...placed._meta };
        return mcp.callTool(
          payload.serverId,
          { name: payload.toolName, ...placed, _meta },
          { timeoutMs: deps.toolTimeoutMs, maySend: () => !deadlinePassed(), onTaskCreated: (taskId) => reportTaskHandle(taskId) },
        );
      },
      { kind: "client" },
    );
  } catch (error) {
    if (error instanceof SendRefusedError) return reportMissedDeadline();
    const reason = `mcp_call_failed: ${(error as Error).message}`;
    effectLog.warn({ attempt, durationMs: Math.round(performance.now() - startedAt), err: (error as Error).message }, "tool.call_failed");
    return markUnknownAndFail(deps, effectLog, commandId, effectId, attempt, reason);
  }
  const parsed = McpToolResultSchema.safeParse(raw);
  if (!parsed.success) {
    effectLog.warn({ attempt }, "tool.result_invalid");
    return markUnknownAndFail(deps, effectLog, commandId, effectId, attempt, "invalid_tool_result: the MCP result is not a CallToolResult");
  }
  const toolResult = parsed.data;
  let result = toMcpExecuteCommandResult(toolResult, payload);
  effectLog.info({ attempt, isError: result.isError ?? false, durationMs: Math.round(performance.now() - startedAt) }, "tool.returned");
  if (result.outputText.length > MAX_OUTPUT_TEXT_LENGTH) {
    effectLog.warn({ length: result.outputText.length, max: MAX_OUTPUT_TEXT_LENGTH }, "tool.output_truncated");
    result = { ...result, outputText: result.outputText.slice(0, MAX_OUTPUT_TEXT_LENGTH) };
  }
  // The API refuses text that is not well-formed UTF-16; a provider's lone
  // surrogate (or one left by the cut above) becomes U+FFFD so the result can still be recorded.
  if (!isWellFormedText(result.outputText)) result = { ...result, outputText: toWellFormed(result.outputText) };
  let receipt: Record<string, unknown> | null = toolResult._meta ?? null;
  // The receipt is opaque and optional: one the API would refuse (too deep, a forbidden key, a lone
  // surrogate, too large) is left out rather than costing the record of a call that did run.
  const receiptProblem = receipt ? findJsonProblem(receipt) : null;
  if (receiptProblem) {
    effectLog.warn({ problem: formatJsonProblem(receiptProblem) }, "effect.receipt_dropped");
    receipt = null;
  } else if (receipt && Buffer.byteLength(JSON.stringify(receipt), "utf8") > MAX_RECEIPT_BYTES) {
    effectLog.warn({ max: MAX_RECEIPT_BYTES }, "effect.receipt_dropped");
    receipt = null;
  }

  // The provider answered: from here on its result must reach the ledger. It is written to the
  // outbox (fsynced) BEFORE it is sent, and reported until the API answers it (see `reportProviderResult`).
  const pending: PendingResult = {
    effectId,
    commandId,
    connectionId,
    attempt,
    idempotencyKey,
    toolName: payload.toolName,
    requestFingerprint: fingerprintArguments(args),
    result,
    receipt,
    recordedAtMs: Date.now(),
  };
  try {
    await deps.outbox?.put(pending);
  } catch (error) {
    // Reporting from memory still beats not reporting; only a crash before the API answers loses it now.
    effectLog.error({ attempt, err: (error as Error).message }, "outbox.write_failed");
  }
  const report = await reportProviderResult(pending, {
    api,
    outbox: deps.outbox,
    logger: effectLog,
    budgetMs: deps.resultReportBudgetMs,
  });
  if (report.kind === "refused") {
    // The API refused to store this result (and will refuse it again). The provider did run, but
    // the ledger cannot say so: fence the effect (never tell the agent it may resend, §3 rule 14).
    if (report.via === "complete")
      return markUnknownAndFail(deps, effectLog, commandId, effectId, attempt, `effect_complete_refused: ${report.code}`);
    return fail(deps, effectLog, commandId, effectId, effectUnknownError(effectId, { reason: `late result refused: ${report.code}` }));
  }
  const stored = report.answer;
  if (report.via === "complete") effectLog.info({ attempt, outcome: stored.outcome, effectStatus: stored.status }, "effect.completed");
  if (report.via === "complete" && stored.status === "succeeded") return complete(deps, effectLog, commandId, effectId, result);
  if (report.via === "late_result") {
    // Fenced meanwhile (e.g. redelivered while the call was in flight): our result is real, so it was
    // reported as evidence, not a replay (see `decideLateEvidence` in effect-lifecycle.machine.ts). The ledger settled or flagged it.
    effectLog.info({ attempt, outcome: stored.outcome, effectStatus: stored.status, reason: stored.reason }, "effect.late_result_reported");
    if (stored.status === "succeeded" && stored.outcome !== "rejected") return complete(deps, effectLog, commandId, effectId, result);
    // We hold a real provider result the ledger did not take (a contradiction it flagged for an
    // operator): never tell the agent it may resend (see `settleCommandFromEffect` in command-settlement.service.ts).
    return fail(
      deps,
      effectLog,
      commandId,
      effectId,
      effectUnknownError(effectId, { effectStatus: stored.status, reason: truncate(stored.reason ?? "late result not taken", 500) }),
    );
  }
  // The ledger did not take our result (e.g. the effect was fenced meanwhile): it decides.
  const runError =
    stored.status === "not_executed" ? effectNotExecutedError(effectId) : effectUnknownError(effectId, { effectStatus: stored.status });
  return fail(deps, effectLog, commandId, effectId, runError);
}

async function markUnknownAndFail(
  deps: McpExecuteHandlerDeps,
  log: Logger,
  commandId: string,
  effectId: string,
  attempt: number,
  reason: string,
): Promise<McpExecuteOutcome> {
  const marked = await deps.api.call("effectMarkUnknown", {
    params: { effectId },
    body: { connectionId: deps.connectionId, attempt, reason: truncate(reason, 500) },
  });
  log.warn({ attempt, outcome: marked.outcome, effectStatus: marked.status }, "effect.marked_unknown");
  const runError =
    marked.status === "not_executed" ? effectNotExecutedError(effectId) : effectUnknownError(effectId, { reason: truncate(reason, 500) });
  return fail(deps, log, commandId, effectId, runError);
}

async function complete(
  deps: McpExecuteHandlerDeps,
  log: Logger,
  commandId: string,
  effectId: string,
  result: McpExecuteCommandResult,
): Promise<McpExecuteOutcome> {
  const update = await sendTerminal(deps, log, commandId, { connectionId: deps.connectionId, status: "completed", result });
  log.info({ status: "completed", outcome: update.outcome, isError: result.isError ?? false }, "command.terminal");
  return { status: "completed", commandId, effectId, result, updateOutcome: update.outcome };
}

async function fail(
  deps: McpExecuteHandlerDeps,
  log: Logger,
  commandId: string,
  effectId: string | null,
  error: RunError,
): Promise<McpExecuteOutcome> {
  const update = await sendTerminal(deps, log, commandId, { connectionId: deps.connectionId, status: "failed", error });
  log.info({ status: "failed", outcome: update.outcome, errorCode: error.code, retryable: error.retryable }, "command.terminal");
  return { status: "failed", commandId, effectId, error, updateOutcome: update.outcome };
}

async function sendTerminal(deps: McpExecuteHandlerDeps, log: Logger, commandId: string, body: CommandUpdateRequest) {
  const update = await deps.api.call("commandUpdate", { params: { commandId }, body });
  if (update.outcome === "rejected") {
    log.warn({ commandStatus: update.status, reason: update.reason }, "command.update_rejected");
  }
  return update;
}

/** `text` cut to `max` characters (with `…`), made well-formed and without NUL: it goes into a RunError or a reason the API validates. */
function truncate(text: string, max: number): string {
  const cut = text.length <= max ? text : `${text.slice(0, max - 1)}…`;
  return toWellFormed(cut).replaceAll("\u0000", "\uFFFD");
}

/** `s` with every lone surrogate replaced by U+FFFD (`String.prototype.toWellFormed`, Node 20+). */
function toWellFormed(s: string): string {
  return (s as string & { toWellFormed(): string }).toWellFormed();
}
