// An operator's manual resolution of an `unknown` effect: the compare-and-set, its audit row and run event in one transaction.
import { McpToolResultSchema, newUlid, toMcpExecuteCommandResult, type McpExecuteCommandResult } from "@mosoo/contracts";
import type { OperatorEffectSummary, OperatorResolveRequest } from "@mosoo/contracts";
import type { RuntimeContext } from "../../../kernel/runtime-context.js";
import { UserFacingError } from "../../../kernel/user-facing-error.js";
import { settleTransition } from "../../ledger/domain/effect-lifecycle.machine.js";
import { effectRows, type EffectRow } from "../../ledger/application/effect-rows.service.js";
import { runTables } from "../../ledger/application/owned-tables.port.js";
import { operatorActionRepository } from "../infrastructure/operator-action.repository.js";
import { toEffectSummary } from "./operator-effect-summary.query.js";

/**
 * Refuses to settle `e` by hand while a reconciliation lease on it is live at `nowMs` (ms; live means
 * `lease_expires_at_ms >= nowMs`, the complement of the takeover rule of `acquireLease`).
 * @throws UserFacingError `effect.lookup_in_progress` (409) with `details.leaseExpiresAtMs` (ms) and
 *   `details.retryAfterMs` (ms until the lease expires at the latest).
 */
function refuseUnderLiveLease(e: EffectRow, nowMs: number): void {
  if (e.leaseOwner === null || e.leaseExpiresAtMs === null || e.leaseExpiresAtMs < nowMs) return;
  throw new UserFacingError(
    "effect.lookup_in_progress",
    `effect ${e.id} is being looked up by a reconciler (lease until ${new Date(e.leaseExpiresAtMs).toISOString()}); ` +
      `retry once the lookup has ended or the lease has expired, then read the effect again: the lookup may settle it`,
    { leaseExpiresAtMs: e.leaseExpiresAtMs, retryAfterMs: e.leaseExpiresAtMs - nowMs + 1 },
  );
}

/**
 * Resolves `unknown` effect `effectId` by hand as `actor` (`OperatorService.resolve`, which checks the
 * flag and the scope and audits a refusal): a compare-and-set on (status, version) and on the lease
 * columns, with the audit row (with the operator's receipt, if any) and the `effect.resolved` run
 * event, in one transaction; then one `operator.resolved` log line. A `succeeded` resolution stores
 * the MCP tool result as the run sees it and its `_meta` as the provider receipt; the lease is cleared.
 * @throws UserFacingError `effect.not_found`; `effect.not_unknown` (409); `effect.lookup_in_progress` (409, see {@link refuseUnderLiveLease}).
 */
export async function resolveByHand(
  ctx: RuntimeContext,
  effectId: string,
  req: OperatorResolveRequest,
  actor: string,
): Promise<OperatorEffectSummary> {
  const now = ctx.clock.nowMs();
  const after = await ctx.store.transaction(async (tx) => {
    const e = await effectRows.findById(tx, effectId);
    if (!e) throw new UserFacingError("effect.not_found", `no effect ${effectId}`);
    if (e.status !== "unknown")
      throw new UserFacingError(
        "effect.not_unknown",
        `effect ${effectId} is ${e.status}; only an unknown effect is resolved by hand (npm run effects -- show ${effectId} says what settled it)`,
      );
    refuseUnderLiveLease(e, now);
    const toolResult = req.outcome === "succeeded" ? McpToolResultSchema.parse(req.result) : null;
    const result: McpExecuteCommandResult | null = toolResult ? toMcpExecuteCommandResult(toolResult, e) : null;
    // The store enforces what refuseUnderLiveLease said: a compare-and-set on (status, version) and on
    // the lease columns (no live lease at `now`), so a lease taken since the read wins on either dialect.
    const changed = await effectRows.updateIfCurrentAndUnleased(
      tx,
      e,
      {
        ...settleTransition(e, req.outcome, "operator"),
        ...(result
          ? { resultJson: JSON.stringify(result), providerReceiptJson: toolResult?._meta ? JSON.stringify(toolResult._meta) : null }
          : {}),
        leaseOwner: null,
        leaseExpiresAtMs: null,
        updatedAtMs: now,
      },
      now,
    );
    if (!changed) {
      const current = await effectRows.findById(tx, effectId);
      if (current?.status === "unknown") refuseUnderLiveLease(current, now);
      throw new UserFacingError("effect.not_unknown", `effect ${effectId} changed meanwhile; read it again`);
    }
    await operatorActionRepository.insert(tx, {
      id: newUlid(now),
      effectId,
      runId: e.runId,
      driverInstanceId: e.driverInstanceId,
      action: "resolve",
      actor,
      reason: req.reason,
      outcome: req.outcome,
      statusBefore: e.status,
      statusAfter: req.outcome,
      receiptJson: req.outcome === "succeeded" && req.receipt ? JSON.stringify(req.receipt) : null,
      createdAtMs: now,
    });
    await runTables().appendEvent(
      tx,
      e.runId,
      "effect.resolved",
      { effectId, commandId: e.commandId, outcome: req.outcome, resolution: "operator", actor },
      now,
    );
    return (await effectRows.findById(tx, effectId))!;
  });
  ctx.logger.info(
    { effectId, commandId: after.commandId, driverInstanceId: after.driverInstanceId, actor, outcome: req.outcome },
    "operator.resolved",
  );
  return toEffectSummary(after);
}
