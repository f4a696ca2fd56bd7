// Records a tool call's intent in the caller's transaction: the command, the effect with its idempotency key, the queued event.
import { newUlid, type DriverInstanceStatus, type McpExecuteCommand, type RunStatus } from "@mosoo/contracts";
import { currentTraceContext } from "@mosoo/telemetry";
import { intentWriteRepository } from "../infrastructure/intent-write.repository.js";
import type { StoreTx } from "../../../platform/db/store.port.js";

/**
 * One `mcp.execute` to record: the run it belongs to, the Driver instance that will execute it,
 * the MCP server and tool, the client's tool-call id (`null` when the runtime generates one), the
 * request id (generated when absent), the arguments (already size-checked) with their JSON and
 * RFC 8785 fingerprint (64 hex), and, for a compensation, the effect it undoes. `sessionId`: the run's
 * session (null only for a run written before effects carried it); `repeatOfEffectId`: the earlier effect
 * this call deliberately repeats past the repeat guard (see `guardRepeat` in repeat-guard.policy.ts). `nowMs`: ms since the epoch.
 */
export interface IntentInput {
  runId: string;
  driverInstanceId: string;
  serverId: string;
  toolName: string;
  clientToolCallId: string | null;
  requestId?: string | undefined;
  argumentsJson: string;
  requestFingerprint: string;
  compensatesEffectId?: string;
  sessionId: string | null;
  repeatOfEffectId?: string;
  /**
   * The run's `status` as the caller read it in this transaction when that read stays current until the
   * commit (SQLite: one writer at a time; the runs module's `findRunForIntent`); absent or on PostgreSQL: the
   * status the intent's writes see under the run's lock.
   */
  runStatusUnderWriteLock?: RunStatus;
  /** SQLite: the command's `seq` the caller already took in this transaction and the instance's status as it saw it (the runs module's fold of its read into the counter bump). */
  numbered?: { seq: number; driverStatus: DriverInstanceStatus };
  nowMs: number;
}

/**
 * What {@link recordIntent} wrote: the command (with its per-instance `seq`), the effect and its idempotency
 * key (ULIDs); and `seen`: the Driver instance's and the run's status as its writes saw them, under the rows'
 * locks (a finalization repair that committed meanwhile shows here), for the caller to check without a re-read.
 */
export interface RecordedIntent {
  commandId: string;
  effectId: string;
  idempotencyKey: string;
  seq: number;
  seen: { driverStatus: DriverInstanceStatus; runStatus: RunStatus };
}

/**
 * Writes, inside the caller's transaction, the command row, the effect's `intent` with its new
 * idempotency key, and the run's `tool_call.queued` event (docs/DESIGN.md §3 rule 1: no intent, no
 * command). The caller checks the run and the Driver instance first and notifies the Driver after
 * the commit. The command keeps the active trace context (the enqueue request's, when traced), so the
 * Driver's spans continue that trace. Throws the store's constraint error when a unique rule is broken (e.g. a second live
 * compensation of one effect), which rolls the whole transaction back.
 */
export async function recordIntent(tx: StoreTx, input: IntentInput): Promise<RecordedIntent> {
  const now = input.nowMs;
  const commandId = newUlid(now);
  const effectId = newUlid(now);
  const idempotencyKey = newUlid(now);
  const payload: McpExecuteCommand = {
    commandId,
    requestId: input.requestId ?? newUlid(now),
    serverId: input.serverId,
    toolCallId: input.clientToolCallId ?? newUlid(now),
    toolName: input.toolName,
    argumentsJson: input.argumentsJson,
  };
  const trace = currentTraceContext();
  const written = await intentWriteRepository.write(tx, {
    command: {
      id: commandId,
      driverInstanceId: input.driverInstanceId,
      runId: input.runId,
      type: "mcp.execute",
      status: "queued",
      payloadJson: JSON.stringify(payload),
      ...(trace ? { traceParent: trace.traceparent, traceState: trace.tracestate ?? null } : {}),
      createdAtMs: now,
      updatedAtMs: now,
    },
    effect: {
      id: effectId,
      commandId,
      runId: input.runId,
      driverInstanceId: input.driverInstanceId,
      serverId: payload.serverId,
      toolName: payload.toolName,
      toolCallId: payload.toolCallId,
      clientToolCallId: input.clientToolCallId,
      requestId: payload.requestId,
      argumentsJson: input.argumentsJson,
      idempotencyKey,
      requestFingerprint: input.requestFingerprint,
      status: "intent",
      ...(input.compensatesEffectId ? { compensatesEffectId: input.compensatesEffectId } : {}),
      sessionId: input.sessionId,
      ...(input.repeatOfEffectId ? { repeatOfEffectId: input.repeatOfEffectId } : {}),
      createdAtMs: now,
      updatedAtMs: now,
    },
    event: {
      runId: input.runId,
      type: "tool_call.queued",
      payload: {
        commandId,
        effectId,
        serverId: input.serverId,
        toolName: input.toolName,
        ...(input.compensatesEffectId ? { compensatesEffectId: input.compensatesEffectId } : {}),
      },
    },
    ...(input.runStatusUnderWriteLock ? { runStatusUnderWriteLock: input.runStatusUnderWriteLock } : {}),
    ...(input.numbered ? { numbered: input.numbered } : {}),
    nowMs: now,
  });
  const { seq, driverStatus, runStatus } = written;
  return { commandId, effectId, idempotencyKey, seq, seen: { driverStatus, runStatus } };
}
