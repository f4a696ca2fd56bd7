/**
 * `@mosoo/effect-reconciliation/host`: the host's machinery (docs/DESIGN.md §4–§6), for the runtime that
 * loads and asks adapters; adapter authors use the package root instead. Pure runtime-owned logic:
 * no database, no HTTP server.
 *
 * - the contract's schemas and bounds (`AdapterDeclarationSchema`, `LookupRequestSchema`,
 *   `LookupOutcomeSchema`, `ReceiptSchema`, `MAX_RECEIPT_BYTES`, `MAX_RESULT_BYTES`);
 * - the registry of adapter factories (`createAdapterRegistry`), adapter sources (`AdapterSourceSchema`),
 *   the loader (`loadAdapterModule`, `instantiateBinding`) and the port that runs adapter code
 *   (`AdapterHost`; an isolated host lives in the API);
 * - the reconcile step with its fail-closed checks (`reconcileEffect`, `askAdapter`, `judgeLookupAnswer`,
 *   `checkEligibility`, `isEligible`) and the decisions it returns (`ReconcileDecision`);
 * - the retention canary (`answerNeedsRetentionCanary`, `retentionCanaryWindow`, `askRetentionCanary`):
 *   a fence-less miss is believed only once the adapter confirmed an older committed key;
 * - the fail-closed planning of a declared compensation (`planCompensation`);
 * - the built-in zero-code convention adapter (`conventionAdapterFactory`, id `mcp-convention`),
 * - the built-in task-handle reconciler (`mcpTasksAdapterFactory`, id `mcp-tasks`, docs/MCP-TASKS.md),
 *   loaded by the host from this entry like an adapter package;
 * - the package's typed errors (`ReconciliationError`, `AdapterCrashedError`, `AdapterAnswerRefusedError`).
 *
 * @example
 * const registry = createAdapterRegistry();
 * registry.register(githubIssuesAdapterFactory);
 * registry.close();
 * const binding = { serverId: "github", adapter: registry.instantiate("github-issues", config.options) };
 * const decision = await reconcileEffect({ effect, binding, nowMs: Date.now(), timeoutMs: 5_000, logger });
 * @module
 */
export {
  AdapterIdSchema,
  AdapterVersionSchema,
  KeyFencingSchema,
  CompensationDeclarationSchema,
  AdapterDeclarationSchema,
  LookupRequestSchema,
  CompensationPlanSchema,
} from "../author/adapter.contract.js";
export type { KeyFencing, CompensationDeclaration, CompensationPlan, DiscoveringAdapterFactory } from "../author/adapter.contract.js";
export { planCompensation, MAX_COMPENSATION_ARGUMENTS_BYTES } from "./compensation-planner.js";
export type { CompensationPlanDecision, CompensationRefusalCode, PlanCompensationInput } from "./compensation-planner.js";
export {
  MAX_RECEIPT_BYTES,
  MAX_RESULT_BYTES,
  MAX_PROVIDER_OPERATION_ID_LENGTH,
  ReceiptSchema,
  BoundedMcpToolResultSchema,
} from "../author/receipt.contract.js";
export type { Receipt } from "../author/receipt.contract.js";
export {
  REASON_CODE_PATTERN,
  AdapterReasonCodeSchema,
  ConfirmedSucceededOutcomeSchema,
  ConfirmedNotExecutedOutcomeSchema,
  StillUnknownOutcomeSchema,
  LookupOutcomeSchema,
} from "../author/lookup-outcome.contract.js";
export type {
  AdapterReasonCode,
  LookupOutcome,
  LookupOutcomeInput,
  ConfirmedSucceededOutcome,
  ConfirmedNotExecutedOutcome,
  StillUnknownOutcome,
} from "../author/lookup-outcome.contract.js";
export type { IdempotencyConvention, ConventionLookupAnswer } from "../author/idempotency-convention.contract.js";
export { ReconcilableEffectSchema } from "./reconcilable-effect.contract.js";
export type { ReconcilableEffect } from "./reconcilable-effect.contract.js";
export {
  INELIGIBLE_REASON_CODES,
  IneligibleReasonCodeSchema,
  RUNTIME_REASON_CODES,
  RuntimeReasonCodeSchema,
} from "./reconcile-decision.contract.js";
export type {
  IneligibleReasonCode,
  RuntimeReasonCode,
  AdapterRef,
  IneligibleDecision,
  ConfirmedSucceededDecision,
  ConfirmedNotExecutedDecision,
  RuntimeStillUnknownDecision,
  AdapterStillUnknownDecision,
  StillUnknownDecision,
  ReconcileDecision,
} from "./reconcile-decision.contract.js";
export { RECONCILIATION_ERROR_CODES, ReconciliationError } from "./reconciliation-errors.js";
export type { ReconciliationErrorCode } from "./reconciliation-errors.js";
export { createAdapterRegistry, adapterFactoryOf } from "./adapter-registry.js";
export type { AdapterRegistry } from "./adapter-registry.js";
export { checkEligibility, isEligible } from "./reconcile-eligibility.js";
export type { EligibilityVerdict } from "./reconcile-eligibility.js";
export {
  reconcileEffect,
  askAdapter,
  judgeLookupAnswer,
  answerNeedsRetentionCanary,
  askRetentionCanary,
  MAX_LOOKUP_TIMEOUT_MS,
} from "./reconcile.service.js";
export { retentionCanaryWindow } from "./retention-canary.js";
export type { RetentionCanaryVerdict, RetentionCanaryInput } from "./retention-canary.js";
export type { ReconcileBinding, ReconcileEffectInput, LookupAnswer } from "./reconcile.service.js";
export { ADAPTER_TERMINATION_REASONS, AdapterAnswerRefusedError, AdapterCrashedError } from "./adapter-source.contract.js";
export type { AdapterTerminationReason } from "./adapter-source.contract.js";
export type { AdapterHost, AdapterBindOptions } from "./adapter-host.contract.js";
export { NOOP_LOGGER } from "./adapter-logger.js";
export { AdapterSourceSchema, declarationHash } from "./adapter-source.contract.js";
export type { AdapterSource, AdapterProvenance } from "./adapter-source.contract.js";
export {
  adapterModuleFromNamespace,
  instantiateBinding,
  loadAdapterModule,
  nearestPackage,
  resolveAdapterModule,
} from "./adapter-loader.js";
export type { LoadedAdapterModule, InstantiatedBinding } from "./adapter-loader.js";
export { narrowAdapter } from "./adapter-coverage.js";
export type { ToolCoverage } from "./adapter-coverage.js";
export { equivalentToolResults } from "./tool-result-equivalence.js";
/** MCP client helpers beyond the author's `callLookupTool`: a client for several calls, and `tools/list`. */
export { withMcpClient, listMcpTools } from "../author/mcp-lookup.js";
export {
  CONVENTION_ADAPTER_ID,
  ConventionAdapterOptionsSchema,
  conventionAdapterFactory,
  conventionDeclaration,
  discoverConvention,
} from "./convention-adapter.js";
export { MCP_TASKS_ADAPTER_ID, McpTasksAdapterOptionsSchema, mcpTasksAdapterFactory } from "./mcp-tasks-adapter.js";
