/**
 * The size limits the API and the Driver share (bounded input).
 * One definition each: the API refuses over-limit input with `request.invalid` (400) and writes
 * nothing; the Driver drops an over-limit receipt before sending it.
 */

/** Largest provider receipt (bytes of JSON, UTF-8) a Driver may report with `complete` or late evidence: 16 KiB. */
export const MAX_PROVIDER_RECEIPT_BYTES = 16 * 1024;

/** Largest tool-call `arguments` (bytes of JSON, UTF-8) the run API accepts: 256 KiB. */
export const MAX_ARGUMENTS_BYTES = 256 * 1024;

/**
 * The largest receipt the runtime accepts: 4096 bytes of UTF-8 JSON (`JSON.stringify` of the whole
 * receipt), from an adapter's lookup or an operator's manual resolution. A receipt is evidence kept
 * with the effect's history, so it is small and bounded. A larger one is `invalid_adapter_output` from an adapter (docs/DESIGN.md §5), 400 `request.invalid` from an operator.
 */
export const MAX_RECEIPT_BYTES = 4096;

/**
 * The largest provider result the runtime accepts in a `confirmed_succeeded` answer or an operator's
 * `succeeded` resolution: 1 MiB (1 048 576 bytes) of UTF-8 JSON, the same bound as
 * `McpExecuteCommandResult.outputText`. A larger one is `invalid_adapter_output` (docs/DESIGN.md §5)
 * from an adapter, 400 `request.invalid` from an operator.
 */
export const MAX_RESULT_BYTES = 1024 * 1024;
