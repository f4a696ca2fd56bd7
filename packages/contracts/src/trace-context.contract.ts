// The W3C Trace Context a command carries from the API to the Driver (and on into the MCP call's `_meta`).
import { z } from "zod";

/** Length of a version-00 `traceparent` (W3C Trace Context Level 1, §3.2): `00-<32 hex>-<16 hex>-<2 hex>`, 55 characters. */
export const TRACEPARENT_LENGTH = 55;
/**
 * Largest `tracestate` kept, in characters: 512, the length W3C Trace Context (§3.3.1.5) asks every
 * vendor to propagate at least, and the limit of OpenTelemetry's own `TraceState`.
 */
export const MAX_TRACESTATE_LENGTH = 512;

/**
 * A `traceparent` of W3C Trace Context version 00: lowercase hex, a trace id and a parent (span) id
 * that are not all zeros (the specification's invalid values), and the trace flags.
 */
export const TraceparentSchema = z
  .string()
  .length(TRACEPARENT_LENGTH)
  .regex(/^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/, "traceparent must be W3C Trace Context version 00");

/**
 * A `tracestate` list (W3C Trace Context §3.3): at most {@link MAX_TRACESTATE_LENGTH} printable ASCII
 * characters (no control characters); its members are the tracing vendors' and passed on unread.
 */
export const TracestateSchema = z
  .string()
  .max(MAX_TRACESTATE_LENGTH)
  .regex(/^[\x20-\x7e]*$/, "tracestate must be printable ASCII");

/**
 * The trace context of the request that enqueued a command, as the Driver receives it on the
 * command (`DriverCommandEnvelope.traceContext`): the Driver's spans for the command and its MCP
 * call continue that trace, and the MCP call sends it on as `_meta.traceparent` / `_meta.tracestate`.
 */
export const TraceContextSchema = z.strictObject({
  traceparent: TraceparentSchema,
  tracestate: TracestateSchema.optional(),
});
/** See {@link TraceContextSchema}. */
export type TraceContext = z.infer<typeof TraceContextSchema>;
