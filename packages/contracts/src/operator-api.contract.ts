/** The operator API's requests and answers, one zod schema each, read by the API, the CLI and the console; and the action table that declares each operator action once. */
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { UlidSchema } from "./ids.contract.js";
import { strictIntegerInput, textSchema } from "./input-safety.contract.js";
import { MAX_RECEIPT_BYTES, MAX_RESULT_BYTES } from "./limits.contract.js";
import { CallIdSchema, ServerIdSchema, ToolNameSchema } from "./mcp-execute.contract.js";
import {
  OPERATOR_ATTENTION_REASONS,
  OPERATOR_SCOPES,
  type OperatorAction,
  type OperatorRefusalCode,
  type OperatorScope,
} from "./reconciliation-records.contract.js";
import { EFFECT_STATUSES } from "./statuses.contract.js";

/** Bytes of `value` as UTF-8 JSON (0 for a value JSON cannot hold). */
const jsonBytes = (value: unknown): number => new TextEncoder().encode(JSON.stringify(value) ?? "").byteLength;

/**
 * Why the operator acts, recorded in the audit trail with the action: `reason` 1–2000 characters of
 * text (trimmed; well-formed, no NUL). Who acts is never a field of the request: the audit `actor` is
 * the name of the operator credential that authenticated it, so a body that
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
 * 2025-06-18, "Tools › Tool Result"), at most {@link MAX_RESULT_BYTES} of JSON. This is what the
 * operator verified the provider answered.
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
 * object; at most {@link MAX_RECEIPT_BYTES} of JSON in all. Stored with the audit row, in the resolution's transaction.
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

/**
 * An effect as the operator sees it in a list: status, `toolError` (a `succeeded` effect whose stored
 * result is an MCP error result, `isError: true`), why it waits (`operatorAttention`), its lookup
 * schedule and times (ms since the epoch).
 */
export const OperatorEffectSummarySchema = z.object({
  id: z.string(),
  runId: z.string(),
  commandId: z.string(),
  driverInstanceId: z.string(),
  serverId: z.string(),
  toolName: z.string(),
  toolCallId: z.string(),
  idempotencyKey: z.string(),
  status: z.enum(EFFECT_STATUSES),
  toolError: z.boolean(),
  resolution: z.string().nullable(),
  operatorAttention: z.string().nullable(),
  lookupCount: z.number(),
  nextLookupAtMs: z.number().nullable(),
  compensatesEffectId: z.string().nullable(),
  createdAtMs: z.number(),
  updatedAtMs: z.number(),
});
/** See {@link OperatorEffectSummarySchema}. */
export type OperatorEffectSummary = z.infer<typeof OperatorEffectSummarySchema>;

/** One page of the operator's effect list, newest first; `nextCursor` continues it (null on the last page). */
export const OperatorEffectPageSchema = z.object({ effects: z.array(OperatorEffectSummarySchema), nextCursor: z.string().nullable() });
/** See {@link OperatorEffectPageSchema}. */
export type OperatorEffectPage = z.infer<typeof OperatorEffectPageSchema>;

/** A command or run an effect belongs to, as `show` answers it (`error`: its stored error JSON, or null). */
const OwnerSchema = z.object({ id: z.string(), status: z.string(), error: z.unknown(), updatedAtMs: z.number() }).nullable();

/**
 * One effect with its whole history, as `show` answers it: the summary, fingerprint, version,
 * arguments, result and receipts (parsed JSON), why it gets no lookup (`noLookupReason`, null when
 * its server's adapter covers its tool), its command and run, then its attempts, lookups
 * (`reconciliations`), operator actions, refused operator actions and compensations, oldest first.
 * The history rows name the fields clients read; every stored column of the row passes through.
 */
export const OperatorEffectDetailSchema = OperatorEffectSummarySchema.extend({
  requestFingerprint: z.string(),
  version: z.number(),
  arguments: z.unknown(),
  noLookupReason: z.string().nullable(),
  result: z.unknown(),
  providerReceipt: z.unknown(),
  reconciliationReceipt: z.unknown(),
  command: OwnerSchema,
  run: OwnerSchema,
  attempts: z.array(
    z.looseObject({
      attempt: z.number(),
      status: z.string(),
      connectionId: z.string(),
      unknownReason: z.string().nullable(),
      startedAtMs: z.number(),
      finishedAtMs: z.number().nullable(),
    }),
  ),
  reconciliations: z.array(
    z.looseObject({
      id: z.string(),
      adapterId: z.string(),
      adapterVersion: z.string(),
      trigger: z.string(),
      outcome: z.string(),
      reasonCode: z.string().nullable(),
      receipt: z.unknown(),
      error: z.string().nullable(),
      startedAtMs: z.number(),
      finishedAtMs: z.number(),
      nextLookupAtMs: z.number().nullable(),
    }),
  ),
  operatorActions: z.array(
    z.looseObject({
      id: z.string(),
      action: z.string(),
      actor: z.string(),
      reason: z.string(),
      outcome: z.string(),
      statusBefore: z.string(),
      statusAfter: z.string(),
      receipt: z.unknown(),
      compensationEffectId: z.string().nullable(),
      createdAtMs: z.number(),
    }),
  ),
  refusedActions: z.array(
    z.looseObject({
      id: z.string(),
      action: z.string(),
      actor: z.string(),
      reason: z.string(),
      outcome: z.string(),
      createdAtMs: z.number(),
    }),
  ),
  compensations: z.array(OperatorEffectSummarySchema),
});
/** See {@link OperatorEffectDetailSchema}. */
export type OperatorEffectDetail = z.infer<typeof OperatorEffectDetailSchema>;

/**
 * The answer of `reconcile`: the lookup's `outcome` (`confirmed_succeeded`, `confirmed_not_executed`,
 * `still_unknown`, `superseded`: another lookup held the lease or the effect changed under this one, or
 * `ineligible`), why (`reasonCode`: the record's reason, e.g. `provider.unavailable`, `lookup_timeout` or
 * `retention_unverified` for `still_unknown`, `lease_held` or `cas_lost` for `superseded`, the eligibility rule for
 * `ineligible`; null when the outcome needs none;
 * absent from an API older than this field), for `still_unknown` the lookup record's `error` (one line, the adapter's
 * own message for `adapter_error`, URL credentials hidden; null otherwise, absent from an older API) and the effect as
 * it stands after it (null when it was not found meanwhile).
 */
export const OperatorReconcileAnswerSchema = z.object({
  outcome: z.enum(["confirmed_succeeded", "confirmed_not_executed", "still_unknown", "superseded", "ineligible"]),
  reasonCode: z.string().nullable().optional(),
  error: z.string().nullable().optional(),
  effect: OperatorEffectSummarySchema.nullable(),
});
/** See {@link OperatorReconcileAnswerSchema}. */
export type OperatorReconcileAnswer = z.infer<typeof OperatorReconcileAnswerSchema>;

/** The answer of `compensate` (202): the new compensation effect, its command, key, tool and the Driver instance it was queued to (ULIDs). */
export const QueuedCompensationSchema = z.object({
  compensationEffectId: z.string(),
  commandId: z.string(),
  idempotencyKey: z.string(),
  driverInstanceId: z.string(),
  toolName: z.string(),
});
/** See {@link QueuedCompensationSchema}. */
export type QueuedCompensation = z.infer<typeof QueuedCompensationSchema>;

/**
 * Counts for an operator's overview: `unknownTotal`, the `unknown` effects by attention reason
 * (`reason` null: no reason yet, lookups continue) and the lookups recorded since `lookupOutcomesSinceMs`
 * (ms since the epoch: the last {@link LOOKUP_OUTCOME_WINDOW_MS}) by outcome and reason code. The window
 * keeps the count's cost to the recent lookups, however long the store's history; an effect's own
 * lookups stay in its detail (`show`).
 */
export const OperatorStatsSchema = z.object({
  unknownTotal: z.number(),
  byAttention: z.array(z.object({ reason: z.string().nullable(), count: z.number() })),
  lookupOutcomesSinceMs: z.number(),
  lookupOutcomes: z.array(z.object({ outcome: z.string(), reasonCode: z.string().nullable(), count: z.number() })),
});
/** How far back the overview's lookup-outcome counts reach: 24 hours, in ms. */
export const LOOKUP_OUTCOME_WINDOW_MS = 24 * 60 * 60 * 1000;
/** See {@link OperatorStatsSchema}. */
export type OperatorStats = z.infer<typeof OperatorStatsSchema>;

/** The console's stats: {@link OperatorStatsSchema} plus the count of `unknown` effects over time (`atMs`: ms since the epoch). */
export const ConsoleStatsSchema = OperatorStatsSchema.extend({
  unknownSeries: z.array(z.object({ atMs: z.number(), count: z.number() })),
});
/** See {@link ConsoleStatsSchema}. */
export type ConsoleStats = z.infer<typeof ConsoleStatsSchema>;

/**
 * The signed-in console session: `actor` is the name of the operator credential whose token opened
 * it (recorded with every action), `scopes` what that credential may do, `csrfToken` the value every
 * POST sends as `X-CSRF-Token`, `expiresAtMs` when it ends (ms since the epoch).
 */
export const ConsoleSessionSchema = z.object({
  actor: z.string(),
  scopes: z.array(z.enum(OPERATOR_SCOPES)).readonly(),
  csrfToken: z.string(),
  expiresAtMs: z.number(),
});
/** See {@link ConsoleSessionSchema}. */
export type ConsoleSession = z.infer<typeof ConsoleSessionSchema>;

/**
 * What one operator action declares (see {@link OPERATOR_ACTION_TABLE}): its request `body` (it
 * carries the audit `reason`), its answer `response`, its success `status`, the refusal codes the
 * operator service throws for it (`errors`, each one of `OPERATOR_REFUSAL_CODES`, so it is audited),
 * the credential `scope` it needs and the `audit` kind its rows are written under.
 */
interface OperatorActionDeclaration {
  body: z.ZodType<{ reason: string }>;
  response: z.ZodType;
  status: readonly number[];
  errors: readonly OperatorRefusalCode[];
  scope: Exclude<OperatorScope, "read">;
  audit: OperatorAction;
}

/**
 * The operator's actions on one effect, each declared once here. Everything else
 * is derived from this table: the route table's `POST /api/operator/effects/:effectId/<name>` and
 * `POST /console/api/effects/:effectId/<name>` (the name in kebab-case, `operator-action-path.ts`), the
 * API's handler map (`OperatorActionHandlers`: the operator service has one method per name), the
 * operator CLI's typed client (`act(name, effectId, body)`) and command list, and the console's calls.
 * A name added here without its service method or its CLI command fails the type check.
 */
export const OPERATOR_ACTION_TABLE = {
  reconcile: {
    body: OperatorReconcileRequestSchema,
    response: OperatorReconcileAnswerSchema,
    status: [200],
    errors: ["effect.not_found", "effect.not_reconcilable"],
    scope: "reconcile",
    audit: "lookup",
  },
  resolve: {
    body: OperatorResolveRequestSchema,
    response: OperatorEffectSummarySchema,
    status: [200],
    errors: ["effect.not_found", "effect.not_unknown", "effect.lookup_in_progress"],
    scope: "resolve",
    audit: "resolve",
  },
  compensate: {
    body: OperatorCompensateRequestSchema,
    response: QueuedCompensationSchema,
    status: [202],
    errors: [
      "effect.not_found",
      "effect.not_succeeded",
      "compensation.not_declared",
      "compensation.exists",
      "compensation.plan_failed",
      "compensation.driver_unavailable",
      "driver.not_found",
    ],
    scope: "compensate",
    audit: "compensate",
  },
} as const satisfies Record<string, OperatorActionDeclaration>;
/** The name of an operator action of {@link OPERATOR_ACTION_TABLE}. */
export type OperatorActionName = keyof typeof OPERATOR_ACTION_TABLE;
/** The names of {@link OPERATOR_ACTION_TABLE}, in its order. */
export const OPERATOR_ACTION_NAMES = Object.keys(OPERATOR_ACTION_TABLE) as OperatorActionName[];
/** The request of action `N` as the service receives it (its body schema's output). */
export type OperatorActionRequest<N extends OperatorActionName> = z.output<(typeof OPERATOR_ACTION_TABLE)[N]["body"]>;
/** The request of action `N` as a client sends it (its body schema's input). */
export type OperatorActionSent<N extends OperatorActionName> = z.input<(typeof OPERATOR_ACTION_TABLE)[N]["body"]>;
/** The answer of action `N` (its response schema's type). */
export type OperatorActionAnswer<N extends OperatorActionName> = z.output<(typeof OPERATOR_ACTION_TABLE)[N]["response"]>;
