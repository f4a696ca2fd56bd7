// @mosoo/telemetry: OpenTelemetry traces of the API and the Driver.
export { startTracing, configuredTracesEndpoint } from "./tracing.js";
export type { Tracing, StartTracingOptions } from "./tracing.js";
export { withSpan, markSpanFailed } from "./spans.js";
export type { SpanOptions } from "./spans.js";
export { currentTraceContext, contextOfTraceContext, contextOfHeaders } from "./trace-context.js";
