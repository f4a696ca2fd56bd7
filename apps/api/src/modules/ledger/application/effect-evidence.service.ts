// Applies a Driver's evidence about an attempt after the fact: a missed send-by deadline, or a late provider result.
import { isDeepStrictEqual } from "node:util";
import {
  MAX_PROVIDER_RECEIPT_BYTES,
  type EffectDeadlineMissedRequest,
  type EffectLateResultRequest,
  type EffectTransitionResponse,
} from "@mosoo/contracts";
import { decideDeadlineMissed, decideLateEvidence, settleTransition } from "../domain/effect-lifecycle.machine.js";
import { UserFacingError } from "../../../kernel/user-facing-error.js";
import { driverInstanceTables, runTables, type DriverInstanceRow } from "./owned-tables.port.js";
import { effectRepository, type AttemptRow, type EffectRow } from "../infrastructure/effect.repository.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import { assertCurrentConnection } from "./connection-fence.policy.js";
import { settleCommandFromEffect } from "./command-settlement.service.js";
import type { RuntimeContext } from "../../../kernel/runtime-context.js";
import { judgeUntilAnswered, REPORT_ROUNDS } from "./report-rounds.policy.js";

/** Default send-by deadline of an `execute` claim (ms) when `MOSOO_SEND_DEADLINE_MS` is not set (see {@link decideDeadlineMissed}). */
export const DEFAULT_SEND_DEADLINE_MS = 10_000;

/**
 * Reads the effect and the reported attempt inside `tx`, with the same acceptance rule as a
 * completion: the report must come from the connection that made the attempt (even if superseded
 * since) or from the instance's current connection.
 * @throws UserFacingError `effect.not_found`, `driver.connection_superseded`.
 */
export async function loadReported(
  tx: StoreTx,
  instance: DriverInstanceRow,
  effectId: string,
  connectionId: string,
  attempt: number,
): Promise<{ eff: EffectRow; attemptRow: AttemptRow | undefined }> {
  const eff = await effectRepository.findOwned(tx, effectId, instance.id);
  if (!eff) throw new UserFacingError("effect.not_found", `no effect ${effectId} for this Driver instance`);
  const attemptRow = (await effectRepository.listAttempts(tx, eff.id)).find((a) => a.attempt === attempt);
  if (attemptRow?.connectionId !== connectionId)
    assertCurrentConnection(await driverInstanceTables().findById(tx, instance.id), connectionId);
  return { eff, attemptRow };
}

/**
 * The ledger's own evidence against a missed-deadline report about `attemptRow` (see {@link decideDeadlineMissed} and {@link decideLateEvidence}): only the connection that made the attempt knows whether it sent, and a missed
 * deadline proves non-execution only if the Driver never said it sent. No row (an attempt that
 * was never made) is left to {@link decideDeadlineMissed}, which rejects it.
 * @throws UserFacingError `effect.not_attempt_connection` (`connectionId` is not the attempt's, e.g. a
 *   later connection of the same instance), `effect.attempt_sent` (a `complete` or `mark-unknown`
 *   about the attempt was received: `sendReportedAtMs` is set).
 */
function assertNothingSent(attemptRow: AttemptRow | undefined, connectionId: string): void {
  if (!attemptRow) return;
  if (attemptRow.connectionId !== connectionId) {
    throw new UserFacingError(
      "effect.not_attempt_connection",
      `attempt ${attemptRow.attempt} was made by another connection; only it can say it sent nothing`,
      { attempt: attemptRow.attempt },
    );
  }
  if (attemptRow.sendReportedAtMs !== null) {
    throw new UserFacingError(
      "effect.attempt_sent",
      `attempt ${attemptRow.attempt} was already reported sent or failed mid-send; a missed deadline proves nothing`,
      { attempt: attemptRow.attempt },
    );
  }
}

/** The lease columns a settling transition clears (a Driver's evidence settles the effect whoever holds its lease). */
const NO_LEASE = { leaseOwner: null, leaseExpiresAtMs: null } as const;

/**
 * The Driver's missed send-by deadline (see {@link decideDeadlineMissed}): proof that attempt `req.attempt`
 * sent nothing. When {@link decideDeadlineMissed} applies it, ONE transaction sets the effect
 * `not_executed` (resolution `deadline_missed`; compare-and-set on status+version, so a
 * reconciler holding the lease loses its commit and records `superseded`), the attempt
 * `not_sent`, an `effect.resolved` run event, and, if the command is not terminal yet, fails it
 * `external_effect.not_executed` (retryable as a new tool call). A lost CAS is judged again on a fresh
 * read ({@link judgeUntilAnswered}), never answered `rejected` for it.
 * Taken only from the connection that made the attempt, and only if the Driver never reported the
 * attempt sent (see {@link assertNothingSent}); a refusal writes nothing.
 * @throws UserFacingError `effect.not_found`, `driver.connection_superseded`, `effect.not_attempt_connection`,
 *   `effect.attempt_sent`; StoreBusyError `store.busy` (503, nothing written) when the CAS lost
 *   {@link REPORT_ROUNDS} times in a row.
 */
export async function reportDeadlineMissed(
  ctx: RuntimeContext,
  instance: DriverInstanceRow,
  effectId: string,
  req: EffectDeadlineMissedRequest,
): Promise<EffectTransitionResponse> {
  const now = ctx.clock.nowMs();
  type Judged = EffectTransitionResponse & { commandId: string; from: string };
  const res = await ctx.store.transaction((tx) => judgeUntilAnswered((): Promise<Judged | undefined> => judgeDeadlineMissed(tx)));
  async function judgeDeadlineMissed(tx: StoreTx): Promise<Judged | undefined> {
    const { eff, attemptRow } = await loadReported(tx, instance, effectId, req.connectionId, req.attempt);
    assertNothingSent(attemptRow, req.connectionId);
    const decision = decideDeadlineMissed(eff, req);
    const base = { commandId: eff.commandId, from: eff.status };
    if (decision.outcome !== "applied")
      return { ...base, outcome: decision.outcome, status: eff.status, ...(decision.reason ? { reason: decision.reason } : {}) };
    const set = { ...settleTransition(eff, "not_executed", "deadline_missed"), ...NO_LEASE, updatedAtMs: now };
    if (!(await effectRepository.updateIfCurrent(tx, eff, set))) return undefined; // judged again on a fresh read
    const reason = `deadline_missed: the claim's answer was read ${req.elapsedMs} ms after the claim request, past its ${eff.sendWithinMs ?? "unrecorded"} ms send-by deadline`;
    await effectRepository.updateAttempt(tx, eff.id, req.attempt, { status: "not_sent", unknownReason: reason, finishedAtMs: now });
    await runTables().appendEvent(
      tx,
      eff.runId,
      "effect.resolved",
      {
        effectId: eff.id,
        commandId: eff.commandId,
        attempt: req.attempt,
        resolution: "deadline_missed",
        effectStatus: "not_executed",
        elapsedMs: req.elapsedMs,
      },
      now,
    );
    await settleCommandFromEffect(tx, { ...eff, ...set, version: eff.version + 1 }, now);
    return { ...base, outcome: "applied", status: "not_executed" };
  }
  const { commandId, from, ...answer } = res;
  ctx.logger.info(
    { driverInstanceId: instance.id, effectId, commandId, attempt: req.attempt, elapsedMs: req.elapsedMs, from, ...answer },
    "effect.deadline_missed",
  );
  return answer;
}

/**
 * Late evidence (see {@link decideLateEvidence}): the provider's real result for attempt `req.attempt`,
 * received by the Driver after the effect was fenced. Judged against the effect as read in the
 * transaction ({@link decideLateEvidence}); the evidence is kept on the attempt row in every case
 * but `rejected`:
 * - `settle`: ONE transaction stores the result and receipt, sets `succeeded` (resolution
 *   `reported_late`; compare-and-set on status+version), records `effect.resolved` and completes
 *   the command if it is not terminal yet; nothing is re-run;
 * - `duplicate`: the same result is already stored; nothing changes;
 * - `kept`: a tool-error result about a `not_executed` effect (no contradiction): answered `rejected`, no flag;
 * - `contradiction`: nothing is overridden; the effect is flagged `late_evidence_contradiction`
 *   (operator attention, visible in `effects list` / `show`) and the answer is `rejected` with why.
 * A lost compare-and-set (the settle's or the flag's: the effect changed after the read, e.g. a
 * reconciler took its lease on another API instance) is judged again on a fresh read
 * ({@link judgeUntilAnswered}): the evidence settles the effect whoever holds the lease, and a lost
 * CAS is never answered `rejected` (the Driver drops a result once it is answered).
 * @throws UserFacingError `effect.not_found`, `driver.connection_superseded`, `request.invalid`
 *   (receipt over 16 KiB, or a result naming another server/tool/request than the effect);
 *   StoreBusyError `store.busy` (503, nothing written; the Driver reports again) when the CAS lost
 *   {@link REPORT_ROUNDS} times in a row.
 */
export async function reportLateResult(
  ctx: RuntimeContext,
  instance: DriverInstanceRow,
  effectId: string,
  req: EffectLateResultRequest,
): Promise<EffectTransitionResponse> {
  const receiptJson = req.receipt === null ? null : JSON.stringify(req.receipt);
  if (receiptJson !== null && Buffer.byteLength(receiptJson) > MAX_PROVIDER_RECEIPT_BYTES) {
    throw new UserFacingError("request.invalid", `receipt exceeds ${MAX_PROVIDER_RECEIPT_BYTES} bytes`);
  }
  const now = ctx.clock.nowMs();
  const resultJson = JSON.stringify(req.result);
  type Judged = EffectTransitionResponse & { commandId: string; action: string };
  const res = await ctx.store.transaction((tx) => judgeUntilAnswered((): Promise<Judged | undefined> => judgeLateResult(tx)));
  async function judgeLateResult(tx: StoreTx): Promise<Judged | undefined> {
    const { eff, attemptRow } = await loadReported(tx, instance, effectId, req.connectionId, req.attempt);
    const r = req.result;
    if (r.serverId !== eff.serverId || r.toolName !== eff.toolName || r.requestId !== eff.requestId) {
      throw new UserFacingError(
        "request.invalid",
        `the result names ${r.serverId}/${r.toolName}/${r.requestId}, the effect is ${eff.serverId}/${eff.toolName}/${eff.requestId}`,
      );
    }
    const matches =
      req.idempotencyKey === eff.idempotencyKey && req.toolName === eff.toolName && req.requestFingerprint === eff.requestFingerprint;
    const sameResult = eff.resultJson !== null && isDeepStrictEqual(JSON.parse(eff.resultJson), JSON.parse(resultJson));
    const { action, reason } = decideLateEvidence(eff, { attempt: req.attempt, matches, sameResult, isError: req.result.isError === true });
    const base = { commandId: eff.commandId, action };
    if (action === "rejected") return { ...base, outcome: "rejected", status: eff.status, ...(reason ? { reason } : {}) };
    if (attemptRow && attemptRow.lateResultJson === null) {
      await effectRepository.updateAttempt(tx, eff.id, req.attempt, {
        lateResultJson: resultJson,
        lateReportedAtMs: now,
        providerReceiptJson: attemptRow.providerReceiptJson ?? receiptJson,
      });
    }
    if (action === "duplicate") return { ...base, outcome: "duplicate", status: eff.status };
    if (action === "kept") return { ...base, outcome: "rejected", status: eff.status, reason: reason ?? "evidence kept" };
    if (action === "contradiction") {
      // A lost compare-and-set raised no flag: judged again on a fresh read, as the settle below is.
      if (
        eff.operatorAttention !== "late_evidence_contradiction" &&
        !(await effectRepository.updateIfCurrent(tx, eff, { operatorAttention: "late_evidence_contradiction", updatedAtMs: now }))
      )
        return undefined;
      return { ...base, outcome: "rejected", status: eff.status, reason: `late_evidence_contradiction: ${reason ?? ""}` };
    }
    const set = {
      ...settleTransition(eff, "succeeded", "reported_late"),
      resultJson,
      providerReceiptJson: receiptJson,
      ...NO_LEASE,
      updatedAtMs: now,
    };
    if (!(await effectRepository.updateIfCurrent(tx, eff, set))) return undefined; // judged again on a fresh read
    await effectRepository.updateAttempt(tx, eff.id, req.attempt, { status: "succeeded", finishedAtMs: attemptRow?.finishedAtMs ?? now });
    await runTables().appendEvent(
      tx,
      eff.runId,
      "effect.resolved",
      { effectId: eff.id, commandId: eff.commandId, attempt: req.attempt, resolution: "reported_late", effectStatus: "succeeded" },
      now,
    );
    await settleCommandFromEffect(tx, { ...eff, ...set, version: eff.version + 1 }, now);
    return { ...base, outcome: "applied", status: "succeeded" };
  }
  const { commandId, action, ...answer } = res;
  const fields = { driverInstanceId: instance.id, effectId, commandId, attempt: req.attempt, action, ...answer };
  if (action === "contradiction") ctx.logger.warn(fields, "effect.late_evidence_contradiction");
  else ctx.logger.info(fields, "effect.late_result");
  return answer;
}
