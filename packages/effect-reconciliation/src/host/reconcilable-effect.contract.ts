// The fields of an unknown effect the reconcile step reads, as a schema.
import { McpTaskIdSchema, REQUEST_FINGERPRINT_PATTERN, ServerIdSchema, ToolNameSchema, UlidSchema } from "@mosoo/contracts";
import { z } from "zod";

/**
 * The fields of an `unknown` external tool effect the reconcile step reads;
 * extra fields (a store row's status, version, ...) are ignored.
 * - `effectId`, `idempotencyKey`: ULIDs;
 * - `serverId`, `toolName`: the MCP server and tool of the write;
 * - `requestFingerprint`: 64 lowercase hex, `fingerprintArguments(arguments)` written with the intent;
 * - `firstDispatchedAtMs`, `lastDispatchedAtMs`: ms since the epoch of the first and latest dispatch
 *   to the provider; both `null` when it was never dispatched. One `null` and not the other, or
 *   `first > last`, is malformed;
 * - `sendWithinMs` (optional, ms): the send-by deadline of the latest `execute` claim (see `sendDeadlinePassed` in effect-claim.contract.ts): the Driver sends no later than `lastDispatchedAtMs + sendWithinMs`, so a
 *   `max_in_flight` window runs until `lastDispatchedAtMs + sendWithinMs + maxInFlightMs`. Absent or
 *   `null` (an effect claimed before the deadline existed) counts as 0.
 * - `taskId` (optional): the provider's MCP task id stored for the latest attempt when the tool was
 *   called task-augmented (`McpTaskIdSchema`); absent or `null` otherwise.
 */
export const ReconcilableEffectSchema = z
  .object({
    effectId: UlidSchema,
    serverId: ServerIdSchema,
    toolName: ToolNameSchema,
    idempotencyKey: UlidSchema,
    requestFingerprint: z.string().regex(REQUEST_FINGERPRINT_PATTERN, "expected 64 lowercase hex characters"),
    firstDispatchedAtMs: z.number().int().nonnegative().nullable(),
    lastDispatchedAtMs: z.number().int().nonnegative().nullable(),
    sendWithinMs: z.number().int().positive().nullable().optional(),
    taskId: McpTaskIdSchema.nullable().optional(),
  })
  .superRefine((effect, ctx) => {
    const first = effect.firstDispatchedAtMs;
    const last = effect.lastDispatchedAtMs;
    if ((first === null) !== (last === null)) {
      ctx.addIssue({ code: "custom", message: "firstDispatchedAtMs and lastDispatchedAtMs must both be null or both be set" });
    } else if (first !== null && last !== null && first > last) {
      ctx.addIssue({ code: "custom", message: "firstDispatchedAtMs must not be after lastDispatchedAtMs" });
    }
  });
/** See {@link ReconcilableEffectSchema}. */
export type ReconcilableEffect = z.infer<typeof ReconcilableEffectSchema>;
