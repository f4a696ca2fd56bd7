// The W3C trace context in and out of the process: HTTP headers, a stored command, an MCP call's `_meta`.
import { context, propagation, ROOT_CONTEXT, type Context } from "@opentelemetry/api";
import { TraceContextSchema, type TraceContext } from "@mosoo/contracts";

/**
 * The active trace context as W3C `traceparent` (and `tracestate` when there is one), through the
 * registered propagator; undefined when nothing is traced (tracing not started, or no active span).
 * A `tracestate` that is not valid by `TraceContextSchema` is left out; an invalid `traceparent`
 * gives undefined, so what this returns always passes the contract.
 */
export function currentTraceContext(): TraceContext | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  const traceparent = carrier["traceparent"];
  if (traceparent === undefined) return undefined;
  const tracestate = carrier["tracestate"];
  // Built without `undefined` members: the value is spread into HTTP headers and an MCP call's `_meta`.
  if (tracestate) {
    const full = TraceContextSchema.safeParse({ traceparent, tracestate });
    if (full.success) return { traceparent: full.data.traceparent, tracestate };
  }
  return TraceContextSchema.safeParse({ traceparent }).success ? { traceparent } : undefined;
}

/**
 * The context to parent spans on for a stored trace context (a command's): its remote span as the
 * parent; the root context (a new trace) when `traceContext` is undefined or tracing is off.
 */
export function contextOfTraceContext(traceContext: TraceContext | undefined): Context {
  if (traceContext === undefined) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, { ...traceContext });
}

/**
 * The context an incoming HTTP request continues: its `traceparent` / `tracestate` headers (read by
 * `header(name)`) through the registered propagator, which ignores malformed values (a new trace then).
 */
export function contextOfHeaders(header: (name: string) => string | undefined): Context {
  return propagation.extract(ROOT_CONTEXT, undefined, {
    keys: () => ["traceparent", "tracestate"],
    get: (_carrier, key) => header(key),
  });
}
