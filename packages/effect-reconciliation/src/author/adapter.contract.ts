// What a reconciliation adapter is: its declaration, the lookup request and context, compensation planning, and its factories.
import { McpTaskIdSchema, REQUEST_FINGERPRINT_PATTERN, ServerIdSchema, ToolNameSchema, UlidSchema } from "@mosoo/contracts";
import { z } from "zod";

/** An adapter id: 1–64 characters, `^[a-z0-9][a-z0-9._-]{0,63}$` (e.g. `github-issues`). Recorded with every outcome. */
export const AdapterIdSchema = z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, "adapter id must match ^[a-z0-9][a-z0-9._-]{0,63}$");

/**
 * An adapter version: a semantic version `MAJOR.MINOR.PATCH[-prerelease][+build]` (semver.org 2.0.0
 * grammar), at most 64 characters. Recorded with every outcome the adapter produces.
 */
export const AdapterVersionSchema = z
  .string()
  .max(64)
  .regex(
    /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$/,
    "version must be a semantic version such as 1.2.0",
  );

/**
 * How the provider makes a "not found" answer final (research/anchors.md §4):
 * - `lookup_fences_key`: after a lookup answers "not found", the provider refuses that key forever
 *   (a tombstone, as an EC2 client token or a closed Step Functions name);
 * - `max_in_flight`: `maxInFlightMs` (positive integer, ms) is the longest time after a request was
 *   sent during which it can still commit *and become visible to lookups* (include the provider's
 *   read lag). Before `lastDispatchedAtMs + maxInFlightMs` a "not found" proves nothing
 *   (`in_flight_window`, docs/DESIGN.md §5).
 */
export const KeyFencingSchema = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("lookup_fences_key") }),
  z.strictObject({ kind: z.literal("max_in_flight"), maxInFlightMs: z.number().int().positive() }),
]);
/** See {@link KeyFencingSchema}. */
export type KeyFencing = z.infer<typeof KeyFencingSchema>;

/**
 * A declared compensating action for one tool (see `CompensationService` in compensation.service.ts): the tool that undoes it and a
 * human description. Nothing infers or starts it: an operator requests it explicitly on a
 * `succeeded` effect, the adapter's `planCompensation` builds its arguments, and it runs as a new
 * effect with its own idempotency key through the same ledger. The compensating tool must be one of
 * the adapter's lookup `tools`, so an interrupted compensation can be reconciled like any write.
 */
export const CompensationDeclarationSchema = z.strictObject({
  toolName: ToolNameSchema,
  description: z.string().min(1).max(1000),
});
/** See {@link CompensationDeclarationSchema}. */
export type CompensationDeclaration = z.infer<typeof CompensationDeclarationSchema>;

/**
 * What an adapter declares about itself and its provider:
 * - `id` ({@link AdapterIdSchema}) and `version` ({@link AdapterVersionSchema});
 * - `tools`: the MCP tool names it can look up by idempotency key (non-empty, no duplicates);
 * - `retentionWindowMs`: how long (positive integer, ms) the provider remembers a key. A
 *   `confirmed_not_executed` is refused once it may have forgotten (`retention_expired`, §5);
 * - `keyFencing`: {@link KeyFencingSchema};
 * - `compensations?`: tool name → {@link CompensationDeclarationSchema}; the compensating tool must be
 *   in `tools` and differ from the tool it undoes; an adapter that declares any must implement
 *   `planCompensation`.
 *
 * A strict object: unknown keys are refused. Options are not part of it: a factory receives them
 * at construction time (see `ReconciliationAdapterFactory`).
 */
export const AdapterDeclarationSchema = z
  .strictObject({
    id: AdapterIdSchema,
    version: AdapterVersionSchema,
    tools: z
      .array(ToolNameSchema)
      .min(1, "an adapter declares at least one tool")
      .refine((tools) => new Set(tools).size === tools.length, "tools must not repeat"),
    retentionWindowMs: z.number().int().positive(),
    keyFencing: KeyFencingSchema,
    compensations: z.record(ToolNameSchema, CompensationDeclarationSchema).optional(),
  })
  .superRefine((d, ctx) => {
    for (const [tool, c] of Object.entries(d.compensations ?? {})) {
      if (c.toolName === tool)
        ctx.addIssue({ code: "custom", path: ["compensations", tool], message: `a tool cannot compensate itself (${tool})` });
      if (!d.tools.includes(c.toolName)) {
        ctx.addIssue({
          code: "custom",
          path: ["compensations", tool, "toolName"],
          message: `compensating tool ${c.toolName} must be one of the adapter's lookup tools, so an interrupted compensation can be reconciled`,
        });
      }
    }
  });
/** See {@link AdapterDeclarationSchema}. */
export type AdapterDeclaration = z.infer<typeof AdapterDeclarationSchema>;

/**
 * What the runtime asks an adapter: "what happened to the write of `toolName` on MCP
 * server `serverId` sent with `idempotencyKey`?".
 * - `effectId`, `idempotencyKey`: ULIDs (the key is sent as `_meta["io.mosoo/idempotency-key"]`);
 * - `requestFingerprint`: 64 lowercase hex, sha-256 of the canonical arguments (`fingerprintArguments`);
 * - `firstDispatchedAtMs`, `lastDispatchedAtMs`: ms since the epoch of the first and the latest
 *   dispatch of the write to the provider (`first <= last`);
 * - `taskId` (optional): the provider's MCP task id, when the write was sent as a task-augmented
 *   `tools/call` and the Driver stored the id before it waited (MCP 2025-11-25 "Tasks"; 1-256
 *   printable ASCII characters). An adapter may ask the provider `tasks/get` / `tasks/result` by it.
 */
export const LookupRequestSchema = z
  .strictObject({
    effectId: UlidSchema,
    serverId: ServerIdSchema,
    toolName: ToolNameSchema,
    idempotencyKey: UlidSchema,
    requestFingerprint: z.string().regex(REQUEST_FINGERPRINT_PATTERN, "expected 64 lowercase hex characters"),
    firstDispatchedAtMs: z.number().int().nonnegative(),
    lastDispatchedAtMs: z.number().int().nonnegative(),
    taskId: McpTaskIdSchema.optional(),
  })
  .refine((r) => r.firstDispatchedAtMs <= r.lastDispatchedAtMs, "firstDispatchedAtMs must not be after lastDispatchedAtMs");
/** See {@link LookupRequestSchema}. */
export type LookupRequest = z.infer<typeof LookupRequestSchema>;

/**
 * The structured logger handed to adapters. Argument order is pino's (`fields`, then `message`),
 * so a pino logger can be passed as is. A call must not throw (the runtime's wrapper swallows it).
 */
export interface AdapterLogger {
  debug(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

/**
 * The context of one lookup: `signal` aborts when the runtime's lookup timeout (or the caller's own
 * signal) fires; an adapter should pass it to its HTTP client and reject promptly once it aborts
 * (the runtime does not wait for it anyway). `logger` carries `{adapterId, effectId}`.
 */
export interface LookupContext {
  signal: AbortSignal;
  logger: AdapterLogger;
}

/**
 * A provider-specific reconciliation adapter (the runtime's side: `askAdapter` and `judgeLookupAnswer` in host/reconcile.service.ts): its `declaration` and a read-only
 * `lookup` by idempotency key. `lookup` returns `unknown` on purpose: the runtime validates the
 * answer against `LookupOutcomeSchema` and applies every fail-closed rule (§5), so an adapter that
 * throws, rejects, hangs or returns garbage never changes an effect.
 */
export interface ReconciliationAdapter {
  readonly declaration: AdapterDeclaration;
  lookup(request: LookupRequest, context: LookupContext): Promise<unknown>;
  /**
   * Builds the arguments of the declared compensating action for one `succeeded` effect (required
   * when `declaration.compensations` is non-empty). Returns `unknown` on purpose: the runtime
   * validates it against `CompensationPlanSchema` (`{arguments: {...}}`) within the lookup timeout;
   * a throw, a timeout or a malformed plan refuses the compensation and changes nothing. It may read
   * from the provider (e.g. find the created object's id by the original key); it must not write.
   */
  planCompensation?(request: CompensationPlanRequest, context: LookupContext): Promise<unknown>;
}

/**
 * What the runtime hands `planCompensation`: the `succeeded` effect to undo.
 * - `effectId`, `idempotencyKey` (ULIDs): the original write and the key it was sent with;
 * - `serverId`, `toolName`: where it ran (the tool has a declared compensation);
 * - `arguments`: the original arguments (a JSON object);
 * - `result`: the stored result the run saw (`outputText`, `isError?`).
 */
export interface CompensationPlanRequest {
  effectId: string;
  serverId: string;
  toolName: string;
  idempotencyKey: string;
  arguments: Record<string, unknown>;
  result: { outputText: string; isError?: boolean };
}

/**
 * What `planCompensation` must answer: `{arguments}`, the JSON object sent to the declared
 * compensating tool (the runtime also bounds its size and requires RFC 8785 canonical JSON).
 */
export const CompensationPlanSchema = z.strictObject({ arguments: z.record(z.string(), z.unknown()) });
/** See {@link CompensationPlanSchema}. */
export type CompensationPlan = z.infer<typeof CompensationPlanSchema>;

/**
 * How adapters are registered: a static `declaration` plus `create(options)`, which validates its
 * own options (with zod; a thrown `ZodError` becomes `adapter.invalid_options` with the zod
 * message) and returns an adapter whose declaration has the same `id` and `version`. The host binds
 * MCP server ids to `(adapter id, options)` in its config and calls `registry.instantiate`.
 */
export interface ReconciliationAdapterFactory {
  readonly declaration: AdapterDeclaration;
  create(options: unknown): ReconciliationAdapter;
}

/**
 * A factory whose declaration depends on what the provider advertises (the zero-code convention
 * adapter): `discover(options, {signal})` reads the provider (e.g. `tools/list`) and
 * returns a ready adapter; the host validates its declaration like any other and requires
 * `declaration.id === id`. `kind` tells it apart from a {@link ReconciliationAdapterFactory}.
 * `discover` rejects when the provider cannot be read or advertises nothing usable.
 */
export interface DiscoveringAdapterFactory {
  readonly kind: "discovering";
  readonly id: string;
  readonly version: string;
  discover(options: unknown, context: { signal: AbortSignal }): Promise<ReconciliationAdapter>;
}
