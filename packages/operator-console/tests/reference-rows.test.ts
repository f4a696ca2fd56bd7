import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { referenceRows } from "../web/reference-rows.js";

/** The API reference page's rows, built from the API's generated OpenAPI document (docs/openapi.json). */
describe("the console's API reference rows", () => {
  const doc: unknown = JSON.parse(readFileSync(join(import.meta.dirname, "../../../docs/openapi.json"), "utf8"));
  const rows = referenceRows(doc);

  it("has one row per operation of the document, with its method, auth and refusal codes", () => {
    const paths = (doc as { paths: Record<string, Record<string, unknown>> }).paths;
    const operations = Object.values(paths).flatMap((item) =>
      Object.keys(item).filter((k) => ["get", "post", "put", "patch", "delete"].includes(k)),
    );
    expect(rows).toHaveLength(operations.length);
    const enqueue = rows.find((r) => r.operationId === "enqueueToolCall");
    expect(enqueue).toMatchObject({ method: "POST", path: "/v1/runs/{runId}/tool-calls", auth: "api_key (runs:write)" });
    expect(enqueue?.refusals.find((f) => f.status === "401")?.codes).toEqual(expect.arrayContaining(["auth.missing_token"]));
    expect(enqueue?.refusals.every((f) => Number(f.status) >= 400)).toBe(true);
  });

  it("yields no row, and does not throw, for a document that is not shaped as expected", () => {
    expect(referenceRows(null)).toEqual([]);
    expect(referenceRows({ paths: { "/x": { get: "not an operation" } } })).toEqual([]);
    expect(
      referenceRows({ paths: { "/x": { get: { responses: { "409": { content: { "application/json": { schema: 5 } } } } } } } }),
    ).toEqual([{ method: "GET", path: "/x", operationId: "", auth: "none", description: "", refusals: [{ status: "409", codes: [] }] }]);
  });
});
