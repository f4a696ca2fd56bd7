// The invariants every crash scenario checks on its JSON line and the run's last view.
import type { RunViewBody } from "../http-clients.js";
import { expectLineMatches } from "./scenario-steps.js";
import { expectInvariant } from "./scenario.types.js";
import type { CrashScenarioSpec, ErrorBody } from "./crash-scenario.types.js";
import type { accountOf } from "./turn-follow-up.js";

/** True when `error` names `effectId` in `details.effectIds` (see `settleCommandFromEffect` in command-settlement.service.ts). */
function namesEffect(error: ErrorBody, effectId: string): boolean {
  const ids = error?.details?.["effectIds"];
  return Array.isArray(ids) && ids.includes(effectId);
}

/**
 * The scenario's invariants: every `spec.expect` key equals the line's; a failed run's account lists the
 * write and is retryable only when nothing was written; at most one provider call and one terminal event;
 * a late commit was refused; an error given while the write is unknown is `external_effect.unknown`,
 * not retryable, naming the effect.
 * @returns the failures, one sentence each (empty when all hold).
 */
export function checkCrashInvariants(
  spec: CrashScenarioSpec,
  line: Record<string, unknown> & { providerCalls: number },
  view: RunViewBody,
  effectId: string,
  account: ReturnType<typeof accountOf>,
  lateWrite: string | undefined,
): string[] {
  const effect = view.effects[0];
  const command = view.commands[0];
  const failures: string[] = [];
  expectLineMatches(failures, line, spec.expect);
  // See `turnInterruptedRunError` in turn-account.ts: the run's account lists the write as the ledger has it; retryable only when nothing was written
  if (view.run.status === "failed") {
    const listed = account.find((c) => c.effectId === effectId);
    const want = effect?.status === "executing" ? "unknown" : effect?.status === "intent" ? "never_sent" : effect?.status;
    expectInvariant(failures, listed?.status === want, `the run's account must list effect ${effectId} as ${want}, was ${listed?.status}`);
    const written = account.some((c) => ["succeeded", "unknown", "compensated"].includes(c.status));
    expectInvariant(
      failures,
      view.run.error?.retryable === !written,
      `the run error is retryable only when nothing of the turn was written`,
    );
  }
  expectInvariant(failures, line.providerCalls <= 1, `the provider must be called at most once for the key, was ${line.providerCalls}`);
  expectInvariant(failures, view.events.filter((e) => e.terminal).length <= 1, "a run has at most one terminal event");
  if (lateWrite) expectInvariant(failures, lateWrite === "refused", "a late commit after a confirmed non-execution must be refused");
  // See `settleCommandFromEffect` in command-settlement.service.ts: an answer given while the write is unknown never invites a resend and names the effect
  for (const [who, error] of [
    ["command", command?.error],
    ["run", view.run.error],
  ] as const) {
    if (error?.code === "external_effect.unknown") {
      expectInvariant(failures, error.retryable === false, `the ${who}'s external_effect.unknown must not be retryable`);
      expectInvariant(
        failures,
        namesEffect(error, effectId),
        `the ${who}'s external_effect.unknown must name effect ${effectId} in details.effectIds`,
      );
    }
    if (effect?.status === "unknown" && error) {
      expectInvariant(
        failures,
        error.code === "external_effect.unknown",
        `the ${who} ended while its effect is unknown: its error must be external_effect.unknown, was ${error.code}`,
      );
    }
  }
  return failures;
}
