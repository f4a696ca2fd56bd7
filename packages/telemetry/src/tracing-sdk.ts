// The OpenTelemetry SDK's setup: imported by startTracing only when tracing is on.
import { context, propagation, trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider, SimpleSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-node";
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";
import type { Tracing } from "./tracing-handle.js";

/** Longest a process's exit waits for its last spans to be exported, in ms: an unreachable collector never holds up a shutdown. */
const SHUTDOWN_BOUND_MS = 2_000;

/**
 * Registers a Node tracer provider named `serviceName` as the global one (with the W3C trace-context
 * propagator and the async-hooks context manager): a span exporter behind a `SimpleSpanProcessor`
 * (tests), or `{url}`: the OTLP/HTTP (JSON) exporter posting to that URL behind a `BatchSpanProcessor`
 * (both read their other `OTEL_EXPORTER_OTLP_*` / `OTEL_BSP_*` settings from the environment). `shutdown()` flushes (for at most
 * {@link SHUTDOWN_BOUND_MS}), then unregisters the globals, so a later {@link startTracingSdk} in the same process starts clean.
 */
export function startTracingSdk(serviceName: string, exporter: SpanExporter | { url: string | undefined }): Tracing {
  const processor =
    "export" in exporter
      ? new SimpleSpanProcessor(exporter)
      : new BatchSpanProcessor(new OTLPTraceExporter(exporter.url !== undefined ? { url: exporter.url } : {}));
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName }),
    spanProcessors: [processor],
  });
  provider.register();
  return {
    enabled: true,
    shutdown: async () => {
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, SHUTDOWN_BOUND_MS);
        timer.unref();
      });
      try {
        await Promise.race([provider.shutdown(), bound]);
      } catch {
        // an exporter that cannot reach its endpoint at exit loses its last spans, never the process's exit
      } finally {
        clearTimeout(timer);
        trace.disable();
        propagation.disable();
        context.disable();
      }
    },
  };
}
