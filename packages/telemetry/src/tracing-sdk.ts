// The OpenTelemetry SDK's setup: imported by startTracing only when tracing is on.
import { context, propagation, trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider, SimpleSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-node";
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";
import type { Tracing } from "./tracing.js";

/**
 * Registers a Node tracer provider named `serviceName` as the global one (with the W3C trace-context
 * propagator and the async-hooks context manager): `exporter` behind a `SimpleSpanProcessor` when
 * given (tests), else the OTLP/HTTP exporter behind a `BatchSpanProcessor` (both read their
 * `OTEL_EXPORTER_OTLP_*` / `OTEL_BSP_*` settings). `shutdown()` flushes, then unregisters the
 * globals, so a later {@link startTracingSdk} in the same process starts clean.
 */
export function startTracingSdk(serviceName: string, exporter: SpanExporter | undefined): Tracing {
  const processor = exporter ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(new OTLPTraceExporter());
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName }),
    spanProcessors: [processor],
  });
  provider.register();
  return {
    enabled: true,
    shutdown: async () => {
      try {
        await provider.shutdown();
      } catch {
        // an exporter that cannot reach its endpoint at exit loses its last spans, never the process's exit
      } finally {
        trace.disable();
        propagation.disable();
        context.disable();
      }
    },
  };
}
