import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import {
  CallIdSchema,
  EFFECT_STATUSES,
  identifierCharsProblem,
  identifierSchema,
  ServerIdSchema,
  strictIntegerInput,
  textSchema,
  ToolNameSchema,
  UlidSchema,
} from "@mosoo/contracts";
import { MAX_RECEIPT_BYTES, MAX_RESULT_BYTES } from "@mosoo/effect-reconciliation/host";
import { OPERATOR_ATTENTION_REASONS } from "@mosoo/contracts";
import { z } from "zod";

const jsonBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v) ?? "", "utf8");

/**
 * Why the operator acts, recorded in the audit trail with the action: `reason` 1–2000 characters of
 * text (trimmed; well-formed, no NUL). Who acts is never a field of the request: the audit `actor` is
 * the name of the operator credential that authenticated it (docs/DESIGN.md §10), so a body that
 * names an `actor` is refused (400 `request.invalid`) rather than silently overruled.
 */
const Audit = {
  reason: z.string().trim().pipe(textSchema(1, 2000)),
  actor: z.never({ error: "the actor is the name of your operator credential; do not send one (put notes in reason)" }).optional(),
};

/**
 * `GET /api/operator/effects` (query string) and `effects list`: which effects to list, newest first.
 * - `status`: one effect status, or `any` (every status); default `unknown`, or every status when
 *   `attention`, `runId` or `toolCallId` is given (a run's or a tool call's effects are read whole);
 * - `attention`: only effects waiting for an operator for this reason (e.g. `contradicted_by_provider`);
 * - `serverId`, `toolName`, `runId`, `toolCallId` (the agent's tool call id, or the one the runtime generated): exact matches;
 * - `minAgeMs`: only effects created at least this long ago (ms, integer ≥ 0);
 * - `limit`: page size, 1–500 (default 50) (over HTTP `minAgeMs` and `limit` are strict decimal
 *   integers: `0x10`, `1e2`, `+5`, ` 5` are refused);
 * - `cursor`: the `nextCursor` of the previous page (an effect id): the page continues after it.
 */
export const OperatorListQuerySchema = z.strictObject({
  status: z.enum([...EFFECT_STATUSES, "any"]).optional(),
  attention: z.enum(OPERATOR_ATTENTION_REASONS).optional(),
  serverId: ServerIdSchema.optional(),
  toolName: ToolNameSchema.optional(),
  runId: UlidSchema.optional(),
  toolCallId: CallIdSchema.optional(),
  minAgeMs: strictIntegerInput(0, Number.MAX_SAFE_INTEGER).optional(),
  limit: strictIntegerInput(1, 500).default(50),
  cursor: UlidSchema.optional(),
});
/** See {@link OperatorListQuerySchema}. */
export type OperatorListQuery = z.infer<typeof OperatorListQuerySchema>;

/** `POST /api/operator/effects/:id/reconcile`: ask the bound adapter once more, now (same path as the sweep, lease respected). */
export const OperatorReconcileRequestSchema = z.strictObject(Audit);
/** See {@link OperatorReconcileRequestSchema}. */
export type OperatorReconcileRequest = z.infer<typeof OperatorReconcileRequestSchema>;

/**
 * An MCP tool result (`CallToolResult`, validated with the MCP SDK's own schema: MCP spec
 * 2025-06-18, "Tools › Tool Result"), at most 1 MiB of JSON. This is what the operator verified
 * the provider answered.
 */
const OperatorToolResultSchema = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
  const parsed = CallToolResultSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    ctx.addIssue({
      code: "custom",
      message: `not an MCP tool result: ${issue ? `${issue.path.join(".") || "result"}: ${issue.message}` : "invalid"}`,
    });
  }
  if (jsonBytes(value) > MAX_RESULT_BYTES) ctx.addIssue({ code: "custom", message: `larger than ${MAX_RESULT_BYTES} bytes` });
});

/**
 * "It happened, here is the ID": the provider receipt an operator attaches to a manual `succeeded`
 * resolution: `providerOperationId` (1–256 characters), `observedAt` (ISO 8601), a small `detail`
 * object; at most 4096 bytes of JSON in all. Stored with the audit row, in the resolution's transaction.
 */
const OperatorReceiptSchema = z
  .strictObject({
    providerOperationId: z.string().min(1).max(256).optional(),
    observedAt: z.iso.datetime().optional(),
    detail: z.record(z.string(), z.unknown()).optional(),
  })
  .refine((r) => jsonBytes(r) <= MAX_RECEIPT_BYTES, `a receipt is at most ${MAX_RECEIPT_BYTES} bytes of JSON`);

/**
 * `POST /api/operator/effects/:id/resolve`: settle an `unknown` effect by hand (resolution
 * `operator`), as `succeeded` with the MCP tool result the operator verified at the provider (and
 * optionally its receipt), or as `not_executed`.
 */
export const OperatorResolveRequestSchema = z.discriminatedUnion("outcome", [
  z.strictObject({
    outcome: z.literal("succeeded"),
    result: OperatorToolResultSchema,
    receipt: OperatorReceiptSchema.optional(),
    ...Audit,
  }),
  z.strictObject({ outcome: z.literal("not_executed"), ...Audit }),
]);
/** See {@link OperatorResolveRequestSchema}. */
export type OperatorResolveRequest = z.infer<typeof OperatorResolveRequestSchema>;

/**
 * `POST /api/operator/effects/:id/compensate`: run the compensating action the bound adapter
 * declares for a `succeeded` effect's tool, as a new effect with its own idempotency key, queued to
 * `driverInstanceId` (default: the original effect's Driver instance, if it is still live).
 */
export const OperatorCompensateRequestSchema = z.strictObject({ ...Audit, driverInstanceId: UlidSchema.optional() });
/** See {@link OperatorCompensateRequestSchema}. */
export type OperatorCompensateRequest = z.infer<typeof OperatorCompensateRequestSchema>;
