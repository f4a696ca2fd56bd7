// The effect ledger's Driver-facing operations: claim with a send-by deadline, complete, mark unknown, missed deadline, late evidence.
import {
  McpExecuteCommandResultSchema,
  type EffectClaim,
  type EffectCompleteRequest,
  type EffectDeadlineMissedRequest,
  type EffectLateResultRequest,
  type EffectMarkUnknownRequest,
  type EffectTaskCreatedRequest,
  type EffectTransitionResponse,
  MAX_PROVIDER_RECEIPT_BYTES,
} from "@mosoo/contracts";
import { decideAttemptReport, decideClaim } from "../domain/effect-lifecycle.machine.js";
import { isTerminalCommandStatus } from "../domain/command-lifecycle.machine.js";
import { UserFacingError } from "../../../kernel/user-facing-error.js";
import { judgeUntilAnswered } from "./report-rounds.policy.js";
import { commandContextTables, driverInstanceTables, runTables, type DriverInstanceRow } from "./owned-tables.port.js";
import { effectRepository, type EffectRow } from "../infrastructure/effect.repository.js";
import { effectLifecycleRepository } from "../infrastructure/effect-lifecycle.repository.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import { assertCurrentConnection } from "./connection-fence.policy.js";
import { DEFAULT_SEND_DEADLINE_MS, reportDeadlineMissed, reportLateResult } from "./effect-evidence.service.js";
import { reportTaskCreated } from "./effect-task-handle.service.js";
import type { RuntimeContext } from "../../../kernel/runtime-context.js";
import type { EffectReconciliationPort } from "./effect-reconciliation.port.js";

/** The claim answer for an effect already past dispatch (no status change). */
function claimFromSettledEffect(effect: EffectRow): EffectClaim {
  switch (effect.status) {
    case "succeeded":
      return {
        kind: "completed",
        effectId: effect.id,
        result: McpExecuteCommandResultSchema.parse(JSON.parse(effect.resultJson ?? "null")),
      };
    case "not_executed":
      return { kind: "not_executed", effectId: effect.id };
    default:
      return { kind: "unknown", effectId: effect.id };
  }
}

/**
 * Marks an `executing` effect `unknown` (compare-and-set) with its current attempt, and records
 * `effect.fenced` on the run. Returns false when the effect was no longer `executing`.
 * `sendReportedAtMs` (ms), when given, is written with the attempt's update (the Driver reported the send).
 */
export async function fenceExecutingEffect(
  tx: StoreTx,
  effect: EffectRow,
  reason: string,
  nowMs: number,
  sendReportedAtMs?: number,
): Promise<boolean> {
  if (effect.status !== "executing" || !(await effectRepository.updateIfCurrent(tx, effect, { status: "unknown", updatedAtMs: nowMs })))
    return false;
  await effectRepository.updateAttempt(tx, effect.id, effect.attemptCount, {
    status: "unknown",
    unknownReason: reason,
    finishedAtMs: nowMs,
    ...(sendReportedAtMs === undefined ? {} : { sendReportedAtMs }),
  });
  await runTables().appendEvent(
    tx,
    effect.runId,
    "effect.fenced",
    { effectId: effect.id, commandId: effect.commandId, attempt: effect.attemptCount, reason },
    nowMs,
  );
  return true;
}

/**
 * {@link fenceExecutingEffect} for every `executing` effect of Driver instance `driverInstanceId` at once
 * (the finalization repair's fence): one multi-row compare-and-set on their status (each row judged as it
 * is when written; see `effectRepository.fenceExecutingOfDriver`), then the current attempts of the rows
 * it changed marked `unknown` with `reason`, and one `effect.fenced` event each, in effect id order
 * (one `seq` reservation per run). Returns the fenced effects (id, command, run, attempt), oldest first.
 */
export async function fenceExecutingEffectsOfDriver(
  tx: StoreTx,
  driverInstanceId: string,
  reason: string,
  nowMs: number,
): Promise<Array<Pick<EffectRow, "id" | "commandId" | "runId" | "attemptCount">>> {
  const fenced = await effectRepository.fenceExecutingOfDriver(tx, driverInstanceId, nowMs);
  if (fenced.length === 0) return fenced;
  await effectRepository.markAttemptsUnknown(
    tx,
    fenced.map((f) => ({ effectId: f.id, attempt: f.attemptCount })),
    reason,
    nowMs,
  );
  await runTables().appendEvents(
    tx,
    fenced.map((f) => ({
      runId: f.runId,
      type: "effect.fenced" as const,
      payload: { effectId: f.id, commandId: f.commandId, attempt: f.attemptCount, reason },
    })),
    nowMs,
  );
  return fenced;
}

/**
 * The effect ledger's Driver-facing operations (each decision is the lifecycle machine's: {@link decideClaim},
 * `decideDeadlineMissed`, `decideLateEvidence` in effect-lifecycle.machine.ts): claim (with its
 * send-by deadline), complete, mark unknown, missed deadline, late evidence. A Driver only reaches
 * its own instance's effects.
 */
export class EffectLedgerService {
  constructor(
    private readonly ctx: RuntimeContext,
    private readonly reconciler?: EffectReconciliationPort,
    /** How long (ms) an inline claim waits for another reconciler's outcome (one lookup timeout). */
    private readonly lookupWaitMs = 5_000,
  ) {}

  /**
   * Claims the effect of `commandId` as a compare-and-set and says what the Driver may do:
   * `intent` → `execute` (attempt n+1, the only path to the provider, within the send-by deadline
   * `sendWithinMs` = `settings.sendDeadlineMs`, default {@link DEFAULT_SEND_DEADLINE_MS}, stored on
   * the effect; see `decideDeadlineMissed` in effect-lifecycle.machine.ts); `executing` → fenced
   * `unknown` (a redelivery means the earlier attempt's fate is uncertain); `succeeded` →
   * `completed` with the stored result; `unknown` → `unknown`; `not_executed` → `not_executed`.
   * When the answer would be `unknown` and the effect is eligible and due for reconciliation, it
   * is reconciled inline first (within the lookup timeout; docs/DESIGN.md §6.1): a confirmed success
   * answers `completed` with the provider's result, a confirmed non-execution `not_executed`; the
   * outcome and its receipt are committed before this returns, so before any terminal update.
   * @throws UserFacingError `driver.connection_superseded`, `command.not_found`, `effect.not_found`,
   *   `command.terminal` (an `intent` effect of a terminal command is never dispatched),
   *   `effect.claim_conflict` (the dispatch's compare-and-set changed nothing, yet the effect then reads
   *   `intent` of a live command on the current connection: nothing is dispatched on that unlocked read).
   */
  async claim(instance: DriverInstanceRow, connectionId: string, commandId: string): Promise<EffectClaim> {
    const now = this.ctx.clock.nowMs();
    const sendWithinMs = this.ctx.settings.sendDeadlineMs ?? DEFAULT_SEND_DEADLINE_MS;
    const { claim, fenced, effect } = await this.ctx.store.transaction(async (tx) => {
      // The usual case first, as one compare-and-set: an `intent` effect of a live command, claimed on the
      // instance's current connection. Anything else changes nothing there and is judged on the rows below.
      const dispatched = await effectLifecycleRepository.claimIntent(tx, {
        commandId,
        driverInstanceId: instance.id,
        connectionId,
        sendWithinMs,
        nowMs: now,
      });
      if (dispatched) {
        const { id, attemptCount: attempt, idempotencyKey } = dispatched;
        return {
          claim: { kind: "execute", effectId: id, attempt, idempotencyKey, sendWithinMs } as EffectClaim,
          fenced: false,
          effect: { id },
        };
      }
      const { driver, command: cmd, effect: eff } = await commandContextTables().read(tx, instance.id, commandId);
      assertCurrentConnection(driver, connectionId);
      if (!cmd) throw new UserFacingError("command.not_found", `no command ${commandId} for this Driver instance`);
      if (!eff) throw new UserFacingError("effect.not_found", `command ${commandId} has no effect`);
      const action = decideClaim(eff.status);
      if (action === "dispatch") {
        if (isTerminalCommandStatus(cmd.status))
          throw new UserFacingError("command.terminal", `command ${commandId} is ${cmd.status}; its effect is never dispatched`);
        // The compare-and-set above is the only path to `execute`: it changed nothing, yet this read (not
        // locked) finds the effect dispatchable, so it raced a change it cannot judge. Refused, nothing dispatched.
        throw new UserFacingError(
          "effect.claim_conflict",
          `effect ${eff.id} reads intent but its claim's compare-and-set changed nothing; nothing was dispatched, claim again`,
          { effectId: eff.id },
        );
      }
      if (action === "fence") {
        await fenceExecutingEffect(tx, eff, "redelivered_while_executing", now);
        return { claim: { kind: "unknown", effectId: eff.id } as EffectClaim, fenced: true, effect: eff };
      }
      return { claim: claimFromSettledEffect(eff), fenced: false, effect: eff };
    });
    this.ctx.logger.info(
      {
        driverInstanceId: instance.id,
        commandId,
        effectId: effect.id,
        claim: claim.kind,
        fenced,
        ...(claim.kind === "execute" ? { attempt: claim.attempt } : {}),
      },
      "effect.claimed",
    );
    if (claim.kind !== "unknown" || !this.reconciler) return claim;
    const current = await this.ctx.store.read((tx) => effectRepository.findById(tx, effect.id));
    if (!current || !this.reconciler.isDue(current, this.ctx.clock.nowMs())) return claim;
    let result = await this.reconciler.reconcile(effect.id, "redelivery");
    if (result.kind === "superseded") {
      // Another reconciler (the sweep, a repair) is looking it up now: wait for its outcome, bounded
      // by one lookup timeout so the Driver's claim request stays within its own timeout.
      const after = await this.reconciler.awaitLease(effect.id, this.lookupWaitMs);
      result = { kind: "superseded", reasonCode: "waited", effect: after };
    }
    const settled = result.effect ? claimFromSettledEffect(result.effect) : claim;
    this.ctx.logger.info(
      { driverInstanceId: instance.id, commandId, effectId: effect.id, reconcile: result.kind, claim: settled.kind },
      "effect.claim_reconciled",
    );
    return settled;
  }

  /**
   * Stores the provider's result for attempt `attempt` (`executing → succeeded`, resolution
   * `provider_result`). Accepted from the connection that made the attempt even if it was superseded
   * since, as long as the effect is still `executing` at that attempt: the result is real. A report
   * on a fenced effect or an older attempt is `rejected` and changes nothing but the attempt's
   * `sendReportedAtMs` (the Driver said it sent; a later `deadline-missed` is refused).
   * @throws UserFacingError `effect.not_found`, `request.invalid` (receipt over {@link MAX_PROVIDER_RECEIPT_BYTES},
   *   or a result whose serverId/toolName/requestId is not the effect's),
   *   `driver.connection_superseded` (neither the current connection nor the attempt's own).
   */
  async complete(instance: DriverInstanceRow, effectId: string, req: EffectCompleteRequest): Promise<EffectTransitionResponse> {
    const receiptJson = req.receipt === null ? null : JSON.stringify(req.receipt);
    if (receiptJson !== null && Buffer.byteLength(receiptJson) > MAX_PROVIDER_RECEIPT_BYTES) {
      throw new UserFacingError("request.invalid", `receipt exceeds ${MAX_PROVIDER_RECEIPT_BYTES} bytes`);
    }
    const r = req.result;
    const resultJson = JSON.stringify(r);
    // The usual case first, as one compare-and-set (see `storeReportedResult`); anything else is judged on the rows.
    const tryFirst = (tx: StoreTx, nowMs: number): Promise<string | undefined> =>
      effectLifecycleRepository.storeReportedResult(tx, {
        effectId,
        driverInstanceId: instance.id,
        connectionId: req.connectionId,
        attempt: req.attempt,
        serverId: r.serverId,
        toolName: r.toolName,
        requestId: r.requestId,
        resultJson,
        receiptJson,
        nowMs,
      });
    return await this.report(
      instance,
      effectId,
      req.connectionId,
      req.attempt,
      "succeeded",
      tryFirst,
      async (tx, eff, now, sendReportedAtMs) => {
        if (r.serverId !== eff.serverId || r.toolName !== eff.toolName || r.requestId !== eff.requestId) {
          throw new UserFacingError(
            "request.invalid",
            `the result names ${r.serverId}/${r.toolName}/${r.requestId}, the effect is ${eff.serverId}/${eff.toolName}/${eff.requestId}`,
          );
        }
        const stored = await effectRepository.updateIfCurrent(tx, eff, {
          status: "succeeded",
          resolution: "provider_result",
          resultJson,
          providerReceiptJson: receiptJson,
          updatedAtMs: now,
        });
        if (!stored) return false; // the effect changed meanwhile (e.g. fenced): judged again on the new row
        await effectRepository.updateAttempt(tx, eff.id, req.attempt, {
          status: "succeeded",
          providerReceiptJson: receiptJson,
          finishedAtMs: now,
          ...(sendReportedAtMs === undefined ? {} : { sendReportedAtMs }),
        });
        return true;
      },
    );
  }

  /**
   * The Driver lost track of attempt `attempt` (e.g. the MCP transport broke mid-call):
   * `executing → unknown`. Same acceptance rules as {@link complete}, and it too sets the attempt's
   * `sendReportedAtMs` whatever the outcome (the call was sent or failed mid-send).
   * @throws UserFacingError `effect.not_found`, `driver.connection_superseded`.
   */
  async markUnknown(instance: DriverInstanceRow, effectId: string, req: EffectMarkUnknownRequest): Promise<EffectTransitionResponse> {
    return await this.report(instance, effectId, req.connectionId, req.attempt, "unknown", undefined, (tx, eff, now, sendReportedAtMs) =>
      fenceExecutingEffect(tx, eff, req.reason, now, sendReportedAtMs),
    );
  }

  /**
   * The Driver missed the send-by deadline of attempt `req.attempt` and sent nothing (see `decideDeadlineMissed` in effect-lifecycle.machine.ts): settles the effect `not_executed` (resolution `deadline_missed`) and fails a
   * non-terminal command `external_effect.not_executed`, in one transaction. See `reportDeadlineMissed`.
   * @throws UserFacingError `effect.not_found`, `driver.connection_superseded`, `effect.not_attempt_connection`
   *   (not the connection that made the attempt), `effect.attempt_sent` (the Driver reported it sent).
   */
  async deadlineMissed(instance: DriverInstanceRow, effectId: string, req: EffectDeadlineMissedRequest): Promise<EffectTransitionResponse> {
    return await reportDeadlineMissed(this.ctx, instance, effectId, req);
  }

  /**
   * Late evidence (see `decideLateEvidence` in effect-lifecycle.machine.ts): the provider's real result after the effect was fenced.
   * Settles an `unknown` effect `succeeded` (resolution `reported_late`) when key, tool and
   * fingerprint match; flags a contradiction with a confirmed outcome. See `reportLateResult`.
   * @throws UserFacingError `effect.not_found`, `driver.connection_superseded`, `request.invalid`.
   */
  async lateResult(instance: DriverInstanceRow, effectId: string, req: EffectLateResultRequest): Promise<EffectTransitionResponse> {
    return await reportLateResult(this.ctx, instance, effectId, req);
  }

  /**
   * The provider accepted attempt `req.attempt` as MCP task `req.taskId` (see `decideTaskHandle` in effect-lifecycle.machine.ts):
   * stores the handle on the effect once, before the Driver waits for the task. See `reportTaskCreated`.
   * @throws UserFacingError `effect.not_found`, `driver.connection_superseded`, `effect.task_id_conflict`.
   */
  async taskCreated(instance: DriverInstanceRow, effectId: string, req: EffectTaskCreatedRequest): Promise<EffectTransitionResponse> {
    return await reportTaskCreated(this.ctx, instance, effectId, req);
  }

  private async report(
    instance: DriverInstanceRow,
    effectId: string,
    connectionId: string,
    attempt: number,
    to: "succeeded" | "unknown",
    tryFirst: ((tx: StoreTx, nowMs: number) => Promise<string | undefined>) | undefined,
    apply: (tx: StoreTx, eff: EffectRow, nowMs: number, sendReportedAtMs: number | undefined) => Promise<boolean>,
  ): Promise<EffectTransitionResponse> {
    const now = this.ctx.clock.nowMs();
    const res = await this.ctx.store.transaction(async (tx): Promise<EffectTransitionResponse & { commandId?: string }> => {
      // `apply` is a compare-and-set on the row read here. When it loses (another unit of work changed
      // the effect after this read and committed first: a fence by a redelivery or a repair; on
      // PostgreSQL's READ COMMITTED the UPDATE then matches nothing), the report is judged again on the
      // row as it is now: a fenced effect answers `rejected` (the Driver keeps the result as late
      // evidence, rule 13), never `applied` for a write that was not stored. A third loss in a row
      // answers 503 `store.busy` with nothing written (the report is idempotent: the Driver retries).
      // `tryFirst`, when given, is the applied case as one compare-and-set (it returns the command id, or
      // undefined having written nothing); only when it does not apply are the rows read and judged.
      const appliedFirst = await tryFirst?.(tx, now);
      if (appliedFirst !== undefined) return { outcome: "applied", status: to, commandId: appliedFirst };
      return await judgeUntilAnswered(async (): Promise<(EffectTransitionResponse & { commandId?: string }) | undefined> => {
        const {
          driver: current,
          effect: eff,
          attempt: attemptRow,
        } = await commandContextTables().readAttemptReport(tx, instance.id, effectId, attempt);
        if (!eff) throw new UserFacingError("effect.not_found", `no effect ${effectId} for this Driver instance`);
        if (attemptRow?.connectionId !== connectionId) assertCurrentConnection(current, connectionId);
        // The Driver says it sent (or tried to): kept whatever the outcome, so a later missed-deadline
        // report about this attempt is refused (see `decideDeadlineMissed` in effect-lifecycle.machine.ts; `effect.attempt_sent`). An applied
        // report writes it with the attempt's own update (one statement); any other answer writes it here.
        const sendReported = attemptRow && attemptRow.sendReportedAtMs === null ? now : undefined;
        const decision = decideAttemptReport(eff, { attempt, to });
        if (decision.outcome !== "applied") {
          if (sendReported !== undefined) await effectRepository.updateAttempt(tx, eff.id, attempt, { sendReportedAtMs: sendReported });
          return {
            outcome: decision.outcome,
            status: eff.status,
            commandId: eff.commandId,
            ...(decision.reason ? { reason: decision.reason } : {}),
          };
        }
        if (await apply(tx, eff, now, sendReported)) return { outcome: "applied", status: to, commandId: eff.commandId };
        return undefined;
      });
    });
    const { commandId, ...answer } = res;
    this.ctx.logger.info(
      { driverInstanceId: instance.id, effectId, commandId, attempt, requested: to, ...answer },
      to === "succeeded" ? "effect.completed" : "effect.marked_unknown",
    );
    return answer;
  }
}
