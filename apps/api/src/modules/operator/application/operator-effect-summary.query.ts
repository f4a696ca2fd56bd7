// How the operator sees one effect in a list (status, tool error, why it waits, lookup schedule).
import type { OperatorEffectSummary } from "@mosoo/contracts";
import { storedResultIsToolError } from "../../ledger/domain/stored-result.js";
import type { EffectRow } from "../../ledger/application/effect-rows.service.js";

/**
 * True for a `succeeded` effect whose stored result is an MCP error result (`isError: true`): the
 * provider answered, but the tool reported a failure (e.g. a business refusal). It is still a
 * settled write outcome (never replayed), shown as `succeeded (tool error)` so it does not pass for
 * a plain success.
 */
function isToolErrorSuccess(e: Pick<EffectRow, "status" | "resultJson">): boolean {
  return e.status === "succeeded" && storedResultIsToolError(e.resultJson) === true;
}

/**
 * An effect as the operator sees it in a list: status, `toolError` (a `succeeded` effect whose
 * result is an MCP error result, see {@link isToolErrorSuccess}), why it waits, its lookup schedule
 * and times (ms since the epoch).
 */
export function toEffectSummary(e: EffectRow): OperatorEffectSummary {
  return {
    id: e.id,
    runId: e.runId,
    commandId: e.commandId,
    driverInstanceId: e.driverInstanceId,
    serverId: e.serverId,
    toolName: e.toolName,
    toolCallId: e.toolCallId,
    idempotencyKey: e.idempotencyKey,
    status: e.status,
    toolError: isToolErrorSuccess(e),
    resolution: e.resolution,
    operatorAttention: e.operatorAttention,
    lookupCount: e.lookupCount,
    nextLookupAtMs: e.nextLookupAtMs,
    compensatesEffectId: e.compensatesEffectId,
    createdAtMs: e.createdAtMs,
    updatedAtMs: e.updatedAtMs,
  };
}
