// An in-test OTLP/HTTP traces receiver (JSON encoding) that keeps every span the processes export.
import { serve, type ServerType } from "@hono/node-server";
import { Hono } from "hono";
import { z } from "zod";

/**
 * One span as the receiver keeps it: the exporting process's `service` (its resource's
 * `service.name`), the W3C ids as lowercase hex (`traceId` 32 digits, `spanId` and `parentSpanId`
 * 16; `parentSpanId` undefined for a root span), its `name` and its string/int/bool attributes.
 */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  attributes: Record<string, string | number | boolean>;
}

/** An OTLP `AnyValue` (only the scalar kinds the runtime's spans use are kept). */
const AnyValueSchema = z.looseObject({
  stringValue: z.string().optional(),
  intValue: z.union([z.string(), z.number()]).optional(),
  boolValue: z.boolean().optional(),
  doubleValue: z.number().optional(),
});
const KeyValueSchema = z.object({ key: z.string(), value: AnyValueSchema });
const HexId = (digits: number) => z.string().regex(new RegExp(`^[0-9a-f]{${digits}}$`));

/**
 * The part of an OTLP/JSON `ExportTraceServiceRequest` (opentelemetry-proto, `trace_service.proto`;
 * JSON mapping with hex ids, as the OTLP specification requires for OTLP/JSON) this receiver reads.
 */
const ExportTraceRequestSchema = z.object({
  resourceSpans: z
    .array(
      z.object({
        resource: z.object({ attributes: z.array(KeyValueSchema).default([]) }).optional(),
        scopeSpans: z
          .array(
            z.object({
              spans: z
                .array(
                  z.object({
                    traceId: HexId(32),
                    spanId: HexId(16),
                    parentSpanId: z.union([HexId(16), z.literal("")]).optional(),
                    name: z.string(),
                    attributes: z.array(KeyValueSchema).default([]),
                  }),
                )
                .default([]),
            }),
          )
          .default([]),
      }),
    )
    .default([]),
});

/** The scalar of an OTLP `AnyValue`, or undefined for the kinds not kept (arrays, maps, bytes). */
function scalarOf(v: z.infer<typeof AnyValueSchema>): string | number | boolean | undefined {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.boolValue !== undefined) return v.boolValue;
  return v.doubleValue;
}

function attributesOf(kvs: ReadonlyArray<z.infer<typeof KeyValueSchema>>): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of kvs) {
    const v = scalarOf(value);
    if (v !== undefined) out[key] = v;
  }
  return out;
}

/** A started {@link startOtlpReceiver}: the base `endpoint` (for `OTEL_EXPORTER_OTLP_ENDPOINT`), the spans received so far, and `close()`. */
export interface OtlpReceiver {
  endpoint: string;
  spans: ReceivedSpan[];
  close(): Promise<void>;
}

/**
 * Starts an OTLP/HTTP receiver on 127.0.0.1 and a free port (hono on @hono/node-server): `POST
 * /v1/traces` with `Content-Type: application/json` (the encoding of `@opentelemetry/exporter-trace-otlp-http`)
 * appends each span to `spans` and answers `{}` (a full success, per the OTLP specification). Any
 * other encoding is answered 415 and a body that is not an export request 400, so an exporter that
 * changed its wire format fails the test that waits for its spans instead of passing silently.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const app = new Hono();
  app.post("/v1/traces", async (c) => {
    if (!(c.req.header("content-type") ?? "").startsWith("application/json") || c.req.header("content-encoding"))
      return c.json({ error: "only uncompressed OTLP/JSON is read here" }, 415);
    const parsed = ExportTraceRequestSchema.safeParse(await c.req.json().catch(() => undefined));
    if (!parsed.success) return c.json({ error: parsed.error.message }, 400);
    for (const rs of parsed.data.resourceSpans) {
      const service = String(attributesOf(rs.resource?.attributes ?? [])["service.name"] ?? "");
      for (const ss of rs.scopeSpans)
        for (const s of ss.spans)
          spans.push({
            service,
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId ? s.parentSpanId : undefined,
            name: s.name,
            attributes: attributesOf(s.attributes),
          });
    }
    return c.json({});
  });
  const { server, port } = await new Promise<{ server: ServerType; port: number }>((resolve) => {
    const server = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, (info) => resolve({ server, port: info.port }));
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
