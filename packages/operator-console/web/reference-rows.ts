/** The rows of the console's API reference, read from an OpenAPI 3.1 document (no DOM, no framework: unit-tested in Node). */
/** What the page reads of one operation in the OpenAPI 3.1 document (the rest is left to the JSON). */
interface OpenApiOperation {
  operationId?: string;
  description?: string;
  "x-mosoo-auth"?: { kind?: string; scope?: string };
  responses?: Record<string, { description?: string; content?: { "application/json"?: { schema?: unknown } } }>;
}

/** One row of the reference: method, path template, operation id, who may call it, and its refusals by status. */
export interface ReferenceRow {
  method: string;
  path: string;
  operationId: string;
  auth: string;
  description: string;
  refusals: Array<{ status: string; codes: string[] }>;
}

const METHODS = ["get", "post", "put", "patch", "delete"] as const;

/** The stable error codes a response lists (`error.code`'s `enum` in its JSON schema); none for a success. */
function codesOf(response: NonNullable<OpenApiOperation["responses"]>[string]): string[] {
  const schema = response.content?.["application/json"]?.schema as
    { properties?: { error?: { properties?: { code?: { enum?: unknown[] } } } } } | undefined;
  const codes = schema?.properties?.error?.properties?.code?.enum ?? [];
  return codes.filter((c): c is string => typeof c === "string");
}

/**
 * The rows of an OpenAPI document's `paths`, in the document's order, each method of a path its own row.
 * Input is untrusted JSON: anything not shaped as expected yields fewer rows, never a throw.
 */
export function referenceRows(doc: unknown): ReferenceRow[] {
  const paths = (doc as { paths?: Record<string, Record<string, OpenApiOperation>> } | null)?.paths ?? {};
  const rows: ReferenceRow[] = [];
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const op = item?.[method];
      if (!op || typeof op !== "object") continue;
      const auth = op["x-mosoo-auth"];
      rows.push({
        method: method.toUpperCase(),
        path,
        operationId: op.operationId ?? "",
        auth: auth?.scope ? `${auth.kind ?? ""} (${auth.scope})` : (auth?.kind ?? "none"),
        description: op.description ?? "",
        refusals: Object.entries(op.responses ?? {})
          .filter(([status]) => Number(status) >= 400)
          .map(([status, r]) => ({ status, codes: codesOf(r) })),
      });
    }
  }
  return rows;
}
