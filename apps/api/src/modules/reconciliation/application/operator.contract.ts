import { z } from "zod";

/** Who acts and why: both recorded in the audit trail with every operator action. */
const noNul = (s: string) => !s.includes("\u0000");
const Audit = {
  actor: z.string().trim().min(1).max(200).refine(noNul, "must not contain NUL"),
  reason: z.string().trim().min(1).max(2000).refine(noNul, "must not contain NUL"),
};

/** `POST /v1/operator/effects/:id/lookup`: ask the bound adapter once more, now. */
export const OperatorLookupRequestSchema = z.strictObject(Audit);
/** See {@link OperatorLookupRequestSchema}. */
export type OperatorLookupRequest = z.infer<typeof OperatorLookupRequestSchema>;

/**
 * `POST /v1/operator/effects/:id/resolve`: settle an `unknown` effect by hand, as `succeeded` with
 * the provider's output (what the operator verified at the provider) or as `not_executed`.
 */
export const OperatorResolveRequestSchema = z.discriminatedUnion("outcome", [
  z.strictObject({ outcome: z.literal("succeeded"), outputText: z.string().max(1024 * 1024), isError: z.boolean().optional(), ...Audit }),
  z.strictObject({ outcome: z.literal("not_executed"), ...Audit }),
]);
/** See {@link OperatorResolveRequestSchema}. */
export type OperatorResolveRequest = z.infer<typeof OperatorResolveRequestSchema>;
