/** Reports a provider's result to the API until the API has answered it, from the Driver's outbox. */
import type { EffectTransitionResponse } from "@mosoo/contracts";
import PQueue from "p-queue";
import type { Logger } from "pino";
import type { DriverApi } from "./api-client.js";
import { ApiRequestError, isConnectionLostError, isRetryableApiError } from "./api-errors.js";
import type { PendingResult, ResultOutboxRepository } from "./result-outbox.repository.js";

/**
 * Default result-report budget, ms (`--result-report-budget-ms`): how long the Driver keeps reporting
 * a provider's result to an API that cannot take it (unreachable, `503 store.busy`, any 5xx) before it
 * gives the result up. 180 s covers a managed PostgreSQL failover (typically 30–60 s) with room to spare.
 */
export const DEFAULT_RESULT_REPORT_BUDGET_MS = 180_000;

/**
 * How many held results a start reports at once (see {@link drainResultOutbox}): 8, so an outbox of
 * hundreds of results (a Driver that ran through a long store outage) does not open hundreds of
 * requests against an API that may just be coming back.
 */
export const HELD_RESULT_REPORT_CONCURRENCY = 8;

/** Dependencies of {@link reportProviderResult}. */
export interface ResultReportDeps {
  /** The Driver's API client (authenticated as the instance that made the attempt). */
  api: DriverApi;
  /** Where the result is held; its entry is removed once the API answered. Absent: the result is reported from memory only. */
  outbox?: ResultOutboxRepository | undefined;
  /** Logger bound to the effect. */
  logger: Logger;
  /** Retry budget of each report, ms (default {@link DEFAULT_RESULT_REPORT_BUDGET_MS}). */
  budgetMs?: number | undefined;
}

/**
 * What became of a held result:
 * - `answered`: the API answered it (`via` the completion, or the late-evidence report when the
 *   completion was `rejected` because the effect was fenced meanwhile); `answer` is its last answer;
 * - `refused`: the API refused it for good (a 4xx that is not a lost connection, e.g. `request.invalid`,
 *   `effect.not_found`); `via` names the report it refused.
 * In both cases the outbox entry is gone.
 */
export type ResultReportOutcome =
  | { kind: "answered"; via: "complete" | "late_result"; answer: EffectTransitionResponse }
  | { kind: "refused"; via: "complete" | "late_result"; status: number; code: string };

/**
 * Reports `pending` (a provider's result, already written to the outbox) until the API answers it
 * (docs/DESIGN.md §11, "Operating through store outages"):
 * 1. `effectComplete` with the attempt's own connection, retried with the Driver's one backoff policy
 *    (jitter) for `budgetMs`; the API's completion is idempotent (a repeat answers `duplicate`);
 * 2. when it answers `rejected` (the effect was fenced `unknown` meanwhile, e.g. by a claim after a
 *    restart, or by finalization), the same result as late evidence (`effectLateResult`, §3 rule 13),
 *    which the API settles `succeeded` (`reported_late`) or flags; same budget;
 * 3. the outbox entry is removed once the API answered, or refused it for good.
 * @throws the last API error, with the entry KEPT, when the budget ran out (logged at error as
 *   `effect.result_report_given_up`, naming the effect: it is left to the fence until the Driver's
 *   next start reports the result again, as late evidence); the API error, with the entry KEPT, on a lost connection (401, 409 `driver.connection_superseded`
 *   / `driver.finalized`) or a contract error: the next start of the Driver reports it again.
 */
export async function reportProviderResult(pending: PendingResult, deps: ResultReportDeps): Promise<ResultReportOutcome> {
  const { effectId, connectionId, attempt, result, receipt } = pending;
  const stored = await report(pending, deps, "complete", () =>
    deps.api.call(
      "effectComplete",
      { params: { effectId }, body: { connectionId, attempt, result, receipt } },
      { budgetMs: deps.budgetMs ?? DEFAULT_RESULT_REPORT_BUDGET_MS },
    ),
  );
  if ("code" in stored) return settle(pending, deps, { kind: "refused", via: "complete", ...stored });
  if (stored.outcome !== "rejected" || stored.status === "succeeded")
    return settle(pending, deps, { kind: "answered", via: "complete", answer: stored });
  // the completion was refused because the effect was fenced meanwhile: say so, then report late evidence
  deps.logger.info({ attempt, outcome: stored.outcome, effectStatus: stored.status }, "effect.completed");
  const { idempotencyKey, toolName, requestFingerprint } = pending;
  const late = { connectionId, attempt, idempotencyKey, toolName, requestFingerprint, result, receipt };
  const answer = await report(pending, deps, "late_result", () =>
    deps.api.call("effectLateResult", { params: { effectId }, body: late }, { budgetMs: deps.budgetMs ?? DEFAULT_RESULT_REPORT_BUDGET_MS }),
  );
  if ("code" in answer) return settle(pending, deps, { kind: "refused", via: "late_result", ...answer });
  return settle(pending, deps, { kind: "answered", via: "late_result", answer });
}

/** One report: the answer, `{status, code}` for a refusal for good, or a throw (see {@link reportProviderResult}). */
async function report(
  pending: PendingResult,
  deps: ResultReportDeps,
  via: "complete" | "late_result",
  send: () => Promise<EffectTransitionResponse>,
): Promise<EffectTransitionResponse | { status: number; code: string }> {
  try {
    return await send();
  } catch (error) {
    if (error instanceof ApiRequestError && !isRetryableApiError(error) && !isConnectionLostError(error))
      return { status: error.status, code: error.code };
    if (isRetryableApiError(error)) {
      const budgetMs = deps.budgetMs ?? DEFAULT_RESULT_REPORT_BUDGET_MS;
      deps.logger.error(
        {
          effectId: pending.effectId,
          commandId: pending.commandId,
          attempt: pending.attempt,
          via,
          budgetMs,
          errorCode: (error as { code?: unknown }).code,
          err: (error as Error).message,
        },
        "effect.result_report_given_up",
      );
      // The entry is kept: the API answered "not written, send again" (a 5xx) or was not reached, so
      // the provider's committed result is still evidence; this Driver's next start reports it again.
    }
    throw error;
  }
}

async function settle(pending: PendingResult, deps: ResultReportDeps, outcome: ResultReportOutcome): Promise<ResultReportOutcome> {
  if (outcome.kind === "refused")
    deps.logger.error(
      { effectId: pending.effectId, attempt: pending.attempt, via: outcome.via, status: outcome.status, errorCode: outcome.code },
      "effect.result_refused",
    );
  await deps.outbox?.remove(pending);
  return outcome;
}

/**
 * At start, before the Driver connects and pulls commands: reports every result its outbox holds
 * (left by an earlier process of this Driver that stopped, or was killed, before the API answered),
 * at most {@link HELD_RESULT_REPORT_CONCURRENCY} at a time (p-queue), each as {@link reportProviderResult} does with its full budget (the budget restarts
 * with the Driver: a result is never given up because the Driver itself was down). Logs
 * `outbox.reported` per result (with the API's answer), `outbox.unreadable` (error) for a file that
 * is not a held result (left for an operator). Returns how many results were answered or refused.
 * @throws the first lost-connection error (401, 409), after every report ended: the Driver cannot go on with this identity.
 */
export async function drainResultOutbox(
  deps: Required<Pick<ResultReportDeps, "outbox">> & Omit<ResultReportDeps, "outbox">,
): Promise<number> {
  const { pending, unreadable } = await deps.outbox.list();
  for (const file of unreadable) deps.logger.error(file, "outbox.unreadable");
  if (pending.length > 0) deps.logger.warn({ count: pending.length, dir: deps.outbox.dirPath }, "outbox.reporting_held_results");
  const queue = new PQueue({ concurrency: HELD_RESULT_REPORT_CONCURRENCY });
  const settled = await Promise.allSettled(
    pending.map((p) =>
      queue.add(async () => {
        const logger = deps.logger.child({ commandId: p.commandId, effectId: p.effectId });
        const outcome = await reportProviderResult(p, { ...deps, logger });
        logger.info(
          {
            attempt: p.attempt,
            heldMs: Math.max(0, Date.now() - p.recordedAtMs),
            ...(outcome.kind === "answered"
              ? { via: outcome.via, outcome: outcome.answer.outcome, effectStatus: outcome.answer.status }
              : { via: outcome.via, refused: outcome.code }),
          },
          "outbox.reported",
        );
      }),
    ),
  );
  const lost = settled.find((s): s is PromiseRejectedResult => s.status === "rejected" && isConnectionLostError(s.reason));
  if (lost) throw lost.reason;
  return settled.filter((s) => s.status === "fulfilled").length;
}
