import { z } from "zod";
import { UlidSchema } from "./ids.contract.js";
import { McpExecuteCommandResultSchema } from "./mcp-execute.contract.js";

/**
 * The ledger's answer to a Driver's claim on an `mcp.execute` command (DESIGN.md §3 rules 2–3, §8):
 * - `execute`: the Driver may call the provider now, once, as attempt `attempt`, sending `idempotencyKey`;
 * - `completed`: the effect already succeeded; send `result` without calling the provider;
 * - `unknown`: the effect is fenced; fail the command with `external_effect.unknown`, do not call the provider;
 * - `not_executed`: a provider adapter proved the write never happened; fail the command with
 *   `external_effect.not_executed`, do not call the provider.
 */
export const EffectClaimSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("execute"), effectId: UlidSchema, attempt: z.number().int().positive(), idempotencyKey: UlidSchema }),
  z.object({ kind: z.literal("completed"), effectId: UlidSchema, result: McpExecuteCommandResultSchema }),
  z.object({ kind: z.literal("unknown"), effectId: UlidSchema }),
  z.object({ kind: z.literal("not_executed"), effectId: UlidSchema }),
]);
/** See {@link EffectClaimSchema}. */
export type EffectClaim = z.infer<typeof EffectClaimSchema>;
