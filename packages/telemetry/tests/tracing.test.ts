// startTracing: the SDK only with an endpoint; without one nothing is loaded and every span is a no-op.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { context, trace } from "@opentelemetry/api";
import { afterEach, describe, expect, it, vi } from "vitest";
import { configuredTracesEndpoint, currentTraceContext, startTracing, withSpan, type Tracing } from "../src/index.js";

const OTEL_GLOBAL = Symbol.for("opentelemetry.js.api.1");
let started: Tracing | undefined;
afterEach(async () => {
  await started?.shutdown();
  started = undefined;
  vi.doUnmock("../src/tracing-sdk.js");
});

describe("configuredTracesEndpoint", () => {
  it("reads the standard OTLP variables, the traces one first, and honours the specification's off switches", () => {
    expect(configuredTracesEndpoint({})).toBeUndefined();
    expect(configuredTracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: "  " })).toBeUndefined();
    expect(configuredTracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe("http://collector:4318");
    expect(
      configuredTracesEndpoint({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://b:4318/v1/traces",
      }),
    ).toBe("http://b:4318/v1/traces");
    expect(configuredTracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_SDK_DISABLED: "true" })).toBeUndefined();
    expect(configuredTracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_TRACES_EXPORTER: "none" })).toBeUndefined();
  });
});

describe("startTracing", () => {
  it("without an endpoint never loads the SDK: nothing registered, every span a no-op, no trace context to send", async () => {
    const sdkLoaded = vi.fn();
    vi.doMock("../src/tracing-sdk.js", () => {
      sdkLoaded();
      return {};
    });
    started = await startTracing({ serviceName: "test", env: {} });
    expect(started.enabled).toBe(false);
    expect(sdkLoaded).not.toHaveBeenCalled();
    expect((globalThis as Record<symbol, Record<string, unknown> | undefined>)[OTEL_GLOBAL]?.["trace"]).toBeUndefined();
    await withSpan("probe", {}, async (span) => {
      expect(span.isRecording()).toBe(false);
      expect(trace.getSpan(context.active())?.isRecording() ?? false).toBe(false);
      expect(currentTraceContext()).toBeUndefined();
    });
  });

  it("with an endpoint starts the SDK: spans record, go on as a W3C traceparent, and are posted to <endpoint>/v1/traces", async () => {
    const posts: Array<{ path: string; body: string }> = [];
    const collector = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => (body += String(chunk)));
      req.on("end", () => {
        posts.push({ path: req.url ?? "", body });
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
    const { port } = collector.address() as AddressInfo;
    try {
      started = await startTracing({ serviceName: "test", env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}/` } });
      expect(started.enabled).toBe(true);
      let traceId = "";
      await withSpan("probe", {}, async (span) => {
        expect(span.isRecording()).toBe(true);
        traceId = span.spanContext().traceId;
        expect(currentTraceContext()).toEqual({ traceparent: `00-${traceId}-${span.spanContext().spanId}-01` });
      });
      await started.shutdown(); // flushes the batch
      expect(posts.map((p) => p.path)).toEqual(["/v1/traces"]);
      expect(posts[0]?.body).toContain(traceId);
      expect(posts[0]?.body).toContain('"probe"');
    } finally {
      collector.close();
    }
  });

  it("records a failed unit of work with its error code, and rethrows the error unchanged", async () => {
    const { InMemorySpanExporter } = await import("@opentelemetry/sdk-trace-node");
    const exporter = new InMemorySpanExporter();
    started = await startTracing({ serviceName: "test", env: {}, exporter });
    const failure = Object.assign(new Error("locked"), { code: "store.busy" });
    await expect(withSpan("store.transaction", {}, async () => Promise.reject(failure))).rejects.toBe(failure);
    const [span] = exporter.getFinishedSpans();
    expect(span?.attributes["error.type"]).toBe("store.busy");
    expect(span?.status.code).toBe(2); // SpanStatusCode.ERROR
  });
});
