// Records a tool call's intent in the caller's transaction: the command, the effect with its idempotency key, the queued event.
import { newUlid, type DriverInstanceStatus, type McpExecuteCommand, type RunStatus } from "@mosoo/contracts";
import { currentTraceContext } from "@mosoo/telemetry";
import { intentWriteRepository } from "../infrastructure/intent-write.repository.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import type { QueuedCommand } from "./owned-tables.port.js";

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
  /** The ids and command row to write ({@link planIntent} of this input); made here when absent. */
  plan?: IntentPlan;
  /**
   * SQLite: `plan`'s command is written already in this transaction at this `seq`, with the instance's status as
   * that INSERT saw it (the runs module's fold of its run read into the command's INSERT, `insertOfActiveRun`).
   */
  commandWritten?: { seq: number; driverStatus: DriverInstanceStatus };
  nowMs: number;
}

/**
 * An intent's ids and its command row, made before anything is written: the command's, the effect's and the
 * idempotency key (ULIDs at `nowMs`), the `mcp.execute` payload (request id and tool-call id generated when
 * absent), and the `queued` command row without its Driver instance, run and `seq` (the active trace context
 * kept, so the Driver's spans continue the enqueue's trace).
 */
export interface IntentPlan {
  commandId: string;
  effectId: string;
  idempotencyKey: string;
  payload: McpExecuteCommand;
  command: Omit<QueuedCommand, "driverInstanceId" | "runId">;
}

/** The {@link IntentPlan} of one tool call (no I/O): new ULIDs at `input.nowMs` (ms since the epoch). */
export function planIntent(
  input: Pick<IntentInput, "serverId" | "toolName" | "clientToolCallId" | "requestId" | "argumentsJson" | "nowMs">,
): IntentPlan {
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
  return {
    commandId,
    effectId,
    idempotencyKey,
    payload,
    command: {
      id: commandId,
      type: "mcp.execute",
      status: "queued",
      payloadJson: JSON.stringify(payload),
      ...(trace ? { traceParent: trace.traceparent, traceState: trace.tracestate ?? null } : {}),
      createdAtMs: now,
      updatedAtMs: now,
    },
  };
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
 * the commit. The ids and the command row are `input.plan`'s, or a new {@link planIntent}'s; with
 * `input.commandWritten` (SQLite) the command is written already and only the effect and the event are. Throws the store's constraint error when a unique rule is broken (e.g. a second live
 * compensation of one effect), which rolls the whole transaction back.
 */
export async function recordIntent(tx: StoreTx, input: IntentInput): Promise<RecordedIntent> {
  const now = input.nowMs;
  const { commandId, effectId, idempotencyKey, payload, command } = input.plan ?? planIntent(input);
  const written = await intentWriteRepository.write(tx, {
    command: { ...command, driverInstanceId: input.driverInstanceId, runId: input.runId },
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
    ...(input.commandWritten ? { commandWritten: input.commandWritten } : {}),
    nowMs: now,
  });
  const { seq, driverStatus, runStatus } = written;
  return { commandId, effectId, idempotencyKey, seq, seen: { driverStatus, runStatus } };
}
