// Starts OpenTelemetry tracing for one process, only when an OTLP endpoint is configured.
import type { SpanExporter } from "@opentelemetry/sdk-trace-node";
import type { Tracing } from "./tracing-handle.js";

export type { Tracing };

/** Options of {@link startTracing}. */
export interface StartTracingOptions {
  /** `service.name` of the spans (`mosoo-api`, `mosoo-driver`) unless `OTEL_SERVICE_NAME` says otherwise. */
  serviceName: string;
  /** The environment to read the standard `OTEL_*` variables from (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /**
   * Test seam: export to this exporter, each span as it ends (`SimpleSpanProcessor`), instead of OTLP;
   * tracing then starts whatever the environment says.
   */
  exporter?: SpanExporter;
}

/**
 * The OTLP traces endpoint the environment configures, or undefined: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
 * (the full URL) or `OTEL_EXPORTER_OTLP_ENDPOINT` (the base URL, `/v1/traces` appended by the exporter),
 * the standard variables of the OpenTelemetry specification ("OTLP Exporter Configuration"). Undefined as
 * well when `OTEL_SDK_DISABLED` is `true` or `OTEL_TRACES_EXPORTER` is `none` (the specification's switches).
 */
export function configuredTracesEndpoint(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env["OTEL_SDK_DISABLED"]?.trim().toLowerCase() === "true") return undefined;
  if (env["OTEL_TRACES_EXPORTER"]?.trim().toLowerCase() === "none") return undefined;
  const endpoint = env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]?.trim() || env["OTEL_EXPORTER_OTLP_ENDPOINT"]?.trim();
  return endpoint ? endpoint : undefined;
}

/**
 * The URL spans are posted to: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given, else
 * `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces` (the specification's rule for the base endpoint).
 */
function tracesUrl(env: NodeJS.ProcessEnv): string | undefined {
  const traces = env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]?.trim();
  if (traces) return traces;
  const base = env["OTEL_EXPORTER_OTLP_ENDPOINT"]?.trim();
  return base ? `${base.replace(/\/+$/, "")}/v1/traces` : undefined;
}

const DISABLED: Tracing = { enabled: false, shutdown: async () => undefined };

/**
 * Starts tracing for this process when {@link configuredTracesEndpoint} names an endpoint (or a test
 * passes `exporter`): the OpenTelemetry SDK is imported then, and only then (a dynamic import; without
 * an endpoint the SDK's modules are never loaded and every span is the `@opentelemetry/api` no-op).
 * With the SDK: a Node tracer provider with `service.name`, the W3C `traceparent`/`tracestate`
 * propagator, async-context propagation, and the OTLP/HTTP exporter behind a batch processor (the
 * exporter reads its own `OTEL_EXPORTER_OTLP_*` settings: headers, timeout, compression).
 * Call it once per process, before any span starts.
 */
export async function startTracing(opts: StartTracingOptions): Promise<Tracing> {
  const env = opts.env ?? process.env;
  if (opts.exporter === undefined && configuredTracesEndpoint(env) === undefined) return DISABLED;
  const { startTracingSdk } = await import("./tracing-sdk.js");
  const serviceName = env["OTEL_SERVICE_NAME"]?.trim() || opts.serviceName;
  return startTracingSdk(serviceName, opts.exporter ?? { url: tracesUrl(env) });
}
