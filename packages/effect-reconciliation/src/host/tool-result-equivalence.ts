// Tells whether two MCP tool results say the same thing, comparing canonical JSON and JSON text blocks by value.
import canonicalize from "canonicalize";

/**
 * True when two MCP tool results say the same thing (README "Comparing results"): equal as JSON
 * after RFC 8785 canonicalization (key order and number spelling do not matter), where every text
 * content block whose `text` is itself JSON is compared by its parsed value (so `{"a":1,"b":2}` and
 * `{"b":2,"a":1}` as text are the same). Everything else is strict: other text, `isError`,
 * `structuredContent`, `_meta` and the order of content blocks must match.
 */
export function equivalentToolResults(a: unknown, b: unknown): boolean {
  return canonicalize(normalize(a)) === canonicalize(normalize(b));
}

function normalize(result: unknown): unknown {
  if (typeof result !== "object" || result === null) return result;
  const copy = JSON.parse(JSON.stringify(result)) as { content?: unknown };
  if (Array.isArray(copy.content)) {
    copy.content = copy.content.map((block: unknown) => {
      const b = block as { type?: unknown; text?: unknown };
      if (b && b.type === "text" && typeof b.text === "string") {
        try {
          return { ...b, text: { json: JSON.parse(b.text) as unknown } };
        } catch {
          return b;
        }
      }
      return b;
    });
  }
  return copy;
}
