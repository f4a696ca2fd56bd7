// Spans of the Mosoo runtime through @opentelemetry/api (no-ops until tracing is started).
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from "@opentelemetry/api";

const TRACER_NAME = "@mosoo/runtime";

/** Options of {@link withSpan}. */
export interface SpanOptions {
  /** The span's kind (default internal): `server` for an incoming request, `client` for an outgoing call. */
  kind?: "internal" | "server" | "client";
  /** The parent context (default: the active one), e.g. a command's or a request's extracted trace context. */
  parent?: Context | undefined;
}

const KINDS = { internal: SpanKind.INTERNAL, server: SpanKind.SERVER, client: SpanKind.CLIENT } as const;

/**
 * Runs `fn` inside a new span named `name` with `attributes`, active for every async call `fn` makes
 * (so spans started below it are its children), and ends the span when `fn` settles. A rejection
 * sets the span's status to error with `error.type` (the error's `code` when it has a string one,
 * else its class name) and is rethrown unchanged; the error's message and stack are not recorded
 * (they may carry a provider's or a user's data). `fn` receives the span to add attributes to.
 * Without tracing started this is a no-op span and costs a function call.
 */
export async function withSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
  opts: SpanOptions = {},
): Promise<T> {
  const tracer = trace.getTracer(TRACER_NAME);
  const parent = opts.parent ?? context.active();
  return tracer.startActiveSpan(name, { kind: KINDS[opts.kind ?? "internal"], attributes }, parent, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.setAttribute("error.type", errorType(err));
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Marks `span` failed with `error.type` = `type` (e.g. an HTTP 5xx answer's error code) without an exception. */
export function markSpanFailed(span: Span, type: string): void {
  span.setAttribute("error.type", type);
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/** The `error.type` of a thrown value: its string `code` (the runtime's typed errors), else its class name, else `unknown`. */
function errorType(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && code.length > 0 && code.length <= 100) return code;
  return err instanceof Error ? err.constructor.name : "unknown";
}
