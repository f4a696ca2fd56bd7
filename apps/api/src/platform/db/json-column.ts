/** Parses a JSON text column (`*_json`); SQL NULL stays `null`. Throws only on corrupt stored JSON. */
export function parseJsonColumn(json: string | null): unknown {
  return json === null ? null : (JSON.parse(json) as unknown);
}
