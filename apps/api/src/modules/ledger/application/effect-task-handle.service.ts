/** The Driver's report of an MCP task handle: stores the provider's task id on the effect once. */
import type { EffectTaskCreatedRequest, EffectTransitionResponse } from "@mosoo/contracts";
import { decideTaskHandle } from "../domain/effect-lifecycle.machine.js";
import { UserFacingError } from "../../../kernel/user-facing-error.js";
import type { DriverInstanceRow } from "./owned-tables.port.js";
import { effectRepository } from "../infrastructure/effect.repository.js";
import { loadReported } from "./effect-evidence.service.js";
import { judgeUntilAnswered } from "./report-rounds.policy.js";
import type { RuntimeContext } from "../../../kernel/runtime-context.js";

/**
 * Stores `req.taskId` as the effect's MCP task handle, in one transaction, as {@link decideTaskHandle}
 * says: `applied` writes the id (compare-and-set on status+version; a loss is judged again on the new
 * row, a third loss in a row answers 503 `store.busy` with nothing written), marks the attempt sent
 * (a later missed-deadline report about it is refused: a task exists, so the request reached the
 * provider); `duplicate` and `rejected` change nothing
 * but the attempt's sent mark. The database backs the rule with a CHECK (bounds) and a trigger (set once).
 * Accepted from the connection that made the attempt even after a newer one superseded it, or from
 * the instance's current connection.
 * @throws UserFacingError `effect.not_found`, `driver.connection_superseded`, `effect.task_id_conflict`
 *   (the effect holds another task id).
 */
export async function reportTaskCreated(
  ctx: RuntimeContext,
  instance: DriverInstanceRow,
  effectId: string,
  req: EffectTaskCreatedRequest,
): Promise<EffectTransitionResponse> {
  const now = ctx.clock.nowMs();
  const answer = await ctx.store.transaction((tx) =>
    judgeUntilAnswered(async (): Promise<EffectTransitionResponse | undefined> => {
      const { eff, attemptRow } = await loadReported(tx, instance, effectId, req.connectionId, req.attempt);
      if (attemptRow && attemptRow.sendReportedAtMs === null)
        await effectRepository.updateAttempt(tx, eff.id, req.attempt, { sendReportedAtMs: now });
      const decision = decideTaskHandle(eff, req);
      if (decision.outcome === "conflict")
        throw new UserFacingError("effect.task_id_conflict", decision.reason ?? "the effect already holds another task id", {
          attempt: req.attempt,
        });
      if (decision.outcome !== "applied")
        return { outcome: decision.outcome, status: eff.status, ...(decision.reason ? { reason: decision.reason } : {}) };
      if (await effectRepository.updateIfCurrent(tx, eff, { taskId: req.taskId, updatedAtMs: now }))
        return { outcome: "applied", status: eff.status };
      return undefined;
    }),
  );
  ctx.logger.info({ driverInstanceId: instance.id, effectId, attempt: req.attempt, ...answer }, "effect.task_handle_reported");
  return answer;
}
