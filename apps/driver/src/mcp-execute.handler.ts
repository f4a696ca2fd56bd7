// Runs one `mcp.execute` command through the ledger: accept, claim, call the MCP tool once, report the result.
import {
  effectNotExecutedError,
  effectUnknownError,
  DEFAULT_KEY_PLACEMENT,
  fingerprintArguments,
  McpToolResultSchema,
  sendDeadlinePassed,
  type DriverCommandEnvelope,
  type McpExecuteCommandResult,
  McpTaskIdSchema,
} from "@mosoo/contracts";
import type { Logger } from "pino";
import { currentTraceContext, withSpan } from "@mosoo/telemetry";
import { complete, fail, markUnknownAndFail, serverUnavailableError } from "./mcp-command-terminal.service.js";
import { McpServerUnavailableError, placeIdempotencyKey, SendRefusedError } from "./mcp-connections.js";
import type { ClaimedAttempt, McpExecuteHandlerDeps, McpExecuteOutcome, PreparedCall } from "./mcp-execute.contract.js";
import { shapeToolResult, truncate } from "./mcp-tool-result.service.js";
import type { PendingResult } from "./result-outbox.repository.js";
import { reportProviderResult, type ResultReportOutcome } from "./result-report.service.js";

export type { McpExecuteHandlerDeps, McpExecuteOutcome } from "./mcp-execute.contract.js";

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
  const log = deps.logger.child({ commandId: envelope.commandId, effectId: null });
  const skipped = await acceptCommand(envelope, deps, log);
  if (skipped) return skipped;
  const prepared = await prepareCall(envelope, deps, log);
  if ("status" in prepared) return prepared;
  const claimed = await claimEffect(envelope, deps, prepared);
  if ("status" in claimed) return claimed;
  if (claimed.deadlinePassed()) return reportMissedDeadline(claimed);
  const called = await callProvider(claimed);
  if ("status" in called) return called;
  const parsed = McpToolResultSchema.safeParse(called.raw);
  if (!parsed.success) {
    claimed.log.warn({ attempt: claimed.attempt }, "tool.result_invalid");
    return markUnknownAndFail(
      deps,
      claimed.log,
      claimed.commandId,
      claimed.effectId,
      claimed.attempt,
      "invalid_tool_result: the MCP result is not a CallToolResult",
    );
  }
  const { result, receipt } = shapeToolResult(parsed.data, envelope.payload, claimed.log, claimed.attempt, called.startedAtMs);
  const report = await recordAndReportResult(claimed, result, receipt);
  return settleFromReport(claimed, report, result);
}

/**
 * Step 1: logs `command.received`, then moves a `queued`/`delivered` command to `accepted` (an
 * `accepted` redelivery skips the update).
 * @returns the `skipped` outcome when the API refused `accepted` or the command is in another status; `null` to go on.
 */
async function acceptCommand(envelope: DriverCommandEnvelope, deps: McpExecuteHandlerDeps, log: Logger): Promise<McpExecuteOutcome | null> {
  const { commandId, payload } = envelope;
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
    const accepted = await deps.api.call("commandUpdate", {
      params: { commandId },
      body: { connectionId: deps.connectionId, status: "accepted" },
    });
    if (accepted.outcome === "rejected") {
      log.warn({ commandStatus: accepted.status, reason: accepted.reason }, "command.skipped");
      return { status: "skipped", commandId, effectId: null, reason: accepted.reason ?? `command is ${accepted.status}` };
    }
    log.debug({ outcome: accepted.outcome }, "command.accepted");
  } else if (envelope.status !== "accepted") {
    log.warn({ commandStatus: envelope.status }, "command.skipped");
    return { status: "skipped", commandId, effectId: null, reason: `command is ${envelope.status}` };
  }
  return null;
}

/**
 * Step 2, before the claim: the MCP server must be connectable (else `failed` `mcp.server_unavailable`)
 * and the key's place free (else `failed` `mcp.server_unavailable`, reason `key_argument_conflict`), so
 * a refusal leaves the effect `intent`.
 * @returns the parsed arguments and the key's placement, or the `failed` outcome.
 */
async function prepareCall(
  envelope: DriverCommandEnvelope,
  deps: McpExecuteHandlerDeps,
  log: Logger,
): Promise<PreparedCall | McpExecuteOutcome> {
  const { commandId, payload } = envelope;
  const { mcp } = deps;
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
  return { args, placement };
}

/**
 * Step 3: `effectClaim`, timed on `deps.monotonicNowMs` from just before the request is sent; logs
 * `effect.claimed`. A `completed` claim completes the command with its stored result, `unknown` /
 * `not_executed` fail it: none of them calls the provider.
 * @returns the `execute` claim in hand, or the command's outcome.
 */
async function claimEffect(
  envelope: DriverCommandEnvelope,
  deps: McpExecuteHandlerDeps,
  prepared: PreparedCall,
): Promise<ClaimedAttempt | McpExecuteOutcome> {
  const { commandId, payload } = envelope;
  const monotonicNowMs = deps.monotonicNowMs ?? (() => performance.now());
  const claimSentAtMs = monotonicNowMs();
  const claim = await deps.api.call("effectClaim", { body: { connectionId: deps.connectionId, commandId } });
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

  const { effectId, attempt, idempotencyKey, sendWithinMs } = claim;
  return {
    ...prepared,
    deps,
    commandId,
    payload,
    effectId,
    attempt,
    idempotencyKey,
    sendWithinMs,
    log: effectLog,
    claimSentAtMs,
    monotonicNowMs,
    deadlinePassed: () => sendDeadlinePassed(claimSentAtMs, monotonicNowMs(), sendWithinMs),
  };
}

/**
 * The send-by deadline passed before the request left: logs `effect.send_deadline_missed`, reports
 * `effectDeadlineMissed` (the API settles the effect `not_executed`) and fails the command
 * `external_effect.not_executed` (or `external_effect.unknown` when the API says the effect is otherwise).
 */
async function reportMissedDeadline(claimed: ClaimedAttempt): Promise<McpExecuteOutcome> {
  const { deps, log: effectLog, commandId, effectId, attempt } = claimed;
  const elapsedMs = Math.max(0, Math.round(claimed.monotonicNowMs() - claimed.claimSentAtMs));
  effectLog.warn({ attempt, elapsedMs, sendWithinMs: claimed.sendWithinMs }, "effect.send_deadline_missed");
  const reported = await deps.api.call("effectDeadlineMissed", {
    params: { effectId },
    body: { connectionId: deps.connectionId, attempt, elapsedMs },
  });
  effectLog.info({ attempt, outcome: reported.outcome, effectStatus: reported.status }, "effect.deadline_missed_reported");
  const runError =
    reported.status === "not_executed"
      ? effectNotExecutedError(effectId, { reason: "send_deadline_missed" })
      : effectUnknownError(effectId, { effectStatus: reported.status });
  return fail(deps, effectLog, commandId, effectId, runError);
}

/**
 * MCP tasks (the set-once handle: `decideTaskHandle` in effect-lifecycle.machine.ts): a task-capable
 * tool answers a task id first; it is stored on the effect (`effectTaskCreated`) before the Driver
 * waits, so a crash after this point leaves a handle recovery can ask about. A report the API cannot
 * take is logged and the wait goes on: the result, when it comes, is the better evidence (outbox, §11),
 * and without the handle a crash ends on the fence as before. Never throws.
 */
async function reportTaskHandle(claimed: ClaimedAttempt, taskId: string): Promise<void> {
  const { deps, log: effectLog, effectId, attempt } = claimed;
  if (!McpTaskIdSchema.safeParse(taskId).success) {
    effectLog.warn({ attempt, length: taskId.length }, "effect.task_id_unstorable");
    return;
  }
  try {
    const stored = await deps.api.call("effectTaskCreated", {
      params: { effectId },
      body: { connectionId: deps.connectionId, attempt, taskId },
    });
    effectLog.info({ attempt, taskId, outcome: stored.outcome, effectStatus: stored.status }, "effect.task_handle_stored");
  } catch (error) {
    effectLog.error({ attempt, taskId, err: (error as Error).message }, "effect.task_report_failed");
  }
}

/**
 * Step 4: the one `tools/call` (span `mcp.tools_call`), the key where the server's config places it
 * and the trace context in `_meta`; never retried. A send refused at the deadline ends as
 * {@link reportMissedDeadline}; a call that throws is fenced (`effectMarkUnknown`, then `failed`).
 * @returns the raw answer and when the call started (`performance.now()`, ms), or the command's outcome.
 */
async function callProvider(claimed: ClaimedAttempt): Promise<{ raw: unknown; startedAtMs: number } | McpExecuteOutcome> {
  const { deps, log: effectLog, payload, attempt, idempotencyKey } = claimed;
  effectLog.info({ attempt, serverId: payload.serverId, toolName: payload.toolName }, "tool.called");
  effectLog.debug({ attempt, idempotencyKey }, "tool.called_with_key"); // keys only at debug
  const startedAt = performance.now();
  let raw: unknown;
  try {
    raw = await withSpan(
      "mcp.tools_call",
      {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": payload.toolName,
        "mosoo.server.id": payload.serverId,
        "mosoo.effect.id": claimed.effectId,
        "mosoo.effect.attempt": attempt,
      },
      () => {
        const placed = placeIdempotencyKey(claimed.placement, claimed.args, idempotencyKey);
        // The trace goes on to the MCP server as `_meta.traceparent` / `_meta.tracestate` (this span is
        // its parent); the idempotency key is spread last, so a key placed under one of those names wins.
        const _meta = { ...currentTraceContext(), ...placed._meta };
        return deps.mcp.callTool(
          payload.serverId,
          { name: payload.toolName, ...placed, _meta },
          {
            timeoutMs: deps.toolTimeoutMs,
            maySend: () => !claimed.deadlinePassed(),
            onTaskCreated: (taskId) => reportTaskHandle(claimed, taskId),
          },
        );
      },
      { kind: "client" },
    );
  } catch (error) {
    if (error instanceof SendRefusedError) return reportMissedDeadline(claimed);
    const reason = `mcp_call_failed: ${(error as Error).message}`;
    effectLog.warn({ attempt, durationMs: Math.round(performance.now() - startedAt), err: (error as Error).message }, "tool.call_failed");
    return markUnknownAndFail(deps, effectLog, claimed.commandId, claimed.effectId, attempt, reason);
  }
  return { raw, startedAtMs: startedAt };
}

/**
 * Step 5: the provider answered, so from here on its result must reach the ledger. It is written to
 * the outbox (fsynced) BEFORE it is sent (a failed write is logged `outbox.write_failed` and the result
 * reported from memory), then reported until the API answers it (see `reportProviderResult`).
 * @throws the API's error once the report budget ran out (`effect.result_report_given_up`) or on a lost connection.
 */
async function recordAndReportResult(
  claimed: ClaimedAttempt,
  result: McpExecuteCommandResult,
  receipt: Record<string, unknown> | null,
): Promise<ResultReportOutcome> {
  const { deps, log: effectLog, attempt } = claimed;
  const pending: PendingResult = {
    effectId: claimed.effectId,
    commandId: claimed.commandId,
    connectionId: deps.connectionId,
    attempt,
    idempotencyKey: claimed.idempotencyKey,
    toolName: claimed.payload.toolName,
    requestFingerprint: fingerprintArguments(claimed.args),
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
  return reportProviderResult(pending, {
    api: deps.api,
    outbox: deps.outbox,
    logger: effectLog,
    budgetMs: deps.resultReportBudgetMs,
  });
}

/**
 * Step 6: ends the command as the API's answer to the result says: `completed` when the effect
 * `succeeded` (by completion, or by late evidence the ledger took); otherwise `failed`, fencing the
 * effect when the API refused the completion for good, `external_effect.unknown` or `not_executed` as the ledger decided.
 */
async function settleFromReport(
  claimed: ClaimedAttempt,
  report: ResultReportOutcome,
  result: McpExecuteCommandResult,
): Promise<McpExecuteOutcome> {
  const { deps, log: effectLog, commandId, effectId, attempt } = claimed;
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
