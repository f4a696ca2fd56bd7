/**
 * The size limits the API and the Driver share (docs/DESIGN.md §10 "Trust": bounded input).
 * One definition each: the API refuses over-limit input with `request.invalid` (400) and writes
 * nothing; the Driver drops an over-limit receipt before sending it.
 */

/** Largest provider receipt (bytes of JSON, UTF-8) a Driver may report with `complete` or late evidence: 16 KiB. */
export const MAX_PROVIDER_RECEIPT_BYTES = 16 * 1024;

/** Largest tool-call `arguments` (bytes of JSON, UTF-8) the run API accepts: 256 KiB. */
export const MAX_ARGUMENTS_BYTES = 256 * 1024;
