// The ledger's answer to a Driver's claim on an effect, and the send-by deadline test the Driver applies to it.
import { z } from "zod";
import { UlidSchema } from "./ids.contract.js";
import { McpExecuteCommandResultSchema } from "./mcp-execute.contract.js";

/** The send-by deadline of an `execute` claim: a positive whole number of ms, at most 10 minutes. */
export const SendWithinMsSchema = z.number().int().positive().max(600_000);

/**
 * The ledger's answer to a Driver's claim on an `mcp.execute` command (see `decideClaim` in effect-lifecycle.machine.ts; docs/DESIGN.md §8):
 * - `execute`: the Driver may call the provider once, as attempt `attempt`, sending `idempotencyKey`,
 *   but only within `sendWithinMs` (ms) of the moment it SENT the claim request, measured on its own
 *   monotonic clock (the send-by deadline: {@link sendDeadlinePassed}). Past it the Driver must not send
 *   `tools/call`; it reports the missed deadline (`DRIVER_API.effectDeadlineMissed`) instead, which
 *   is proof of non-execution. The API counts a `max_in_flight` window from the claim plus
 *   `sendWithinMs` plus the adapter's `maxInFlightMs`;
 * - `completed`: the effect already succeeded; send `result` without calling the provider;
 * - `unknown`: the effect is fenced; fail the command with `external_effect.unknown`, do not call the provider;
 * - `not_executed`: a provider adapter proved the write never happened; fail the command with
 *   `external_effect.not_executed`, do not call the provider.
 */
export const EffectClaimSchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("execute"),
    effectId: UlidSchema,
    attempt: z.number().int().positive(),
    idempotencyKey: UlidSchema,
    sendWithinMs: SendWithinMsSchema,
  }),
  z.object({ kind: z.literal("completed"), effectId: UlidSchema, result: McpExecuteCommandResultSchema }),
  z.object({ kind: z.literal("unknown"), effectId: UlidSchema }),
  z.object({ kind: z.literal("not_executed"), effectId: UlidSchema }),
]);
/** See {@link EffectClaimSchema}. */
export type EffectClaim = z.infer<typeof EffectClaimSchema>;

/**
 * The send-by deadline test of docs/DESIGN.md §3 rule 12, on one monotonic clock (ms): true when
 * `nowMs - claimSentAtMs >= sendWithinMs`, i.e. the Driver must NOT send `tools/call` any more.
 * `claimSentAtMs` is when the Driver SENT the claim request (before the API claimed, so the test is
 * conservative); a clock that went backwards (`nowMs < claimSentAtMs`) counts as passed.
 */
export function sendDeadlinePassed(claimSentAtMs: number, nowMs: number, sendWithinMs: number): boolean {
  const elapsed = nowMs - claimSentAtMs;
  return !(elapsed >= 0 && elapsed < sendWithinMs);
}
