// Renders the `mosoo-effects` answers as terminal tables and one-line summaries, control characters escaped.
import Table from "cli-table3";
import ms from "ms";

type Row = Record<string, unknown>;

/** Each character `controls` matches, written as a `\uXXXX` escape. */
const escaped = (text: string, controls: RegExp): string =>
  text.replace(controls, (match) =>
    match
      .split("") // UTF-16 units: a tag character's surrogate pair as its two escapes
      .map((unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, "0")}`)
      .join(""),
  );
/**
 * Invisible characters that reorder or hide text (Unicode's bidirectional controls U+061C, U+200E/F, U+202A-202E,
 * U+2066-2069; zero-width and format characters U+00AD, U+034F, U+180E, U+200B-200D, U+2060-2064, U+206A-206F,
 * U+FEFF, U+FFF9-FFFB; variation selectors U+FE00-FE0F; line and paragraph separators U+2028/9; and, as their
 * surrogate pairs, the tag characters U+E0000-E007F), which an adapter's message could use to make a line read as
 * something else.
 */
const FORMAT_CHARACTERS = "\u00ad\u034f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufe00-\ufe0f\ufeff\ufff9-\ufffb";
/** A tag character (U+E0000-E007F) as its UTF-16 surrogate pair. */
const TAG_CHARACTER = "\udb40[\udc00-\udc7f]";
const NOT_PRINTABLE = new RegExp(`[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f${FORMAT_CHARACTERS}]|${TAG_CHARACTER}`, "g");
const NOT_ONE_LINE = new RegExp(`[\\u0000-\\u001f\\u007f-\\u009f${FORMAT_CHARACTERS}]|${TAG_CHARACTER}`, "g");
const RAW_IN_JSON = new RegExp(`[\\u007f-\\u009f${FORMAT_CHARACTERS}]|${TAG_CHARACTER}`, "g");
/**
 * Control characters (NUL, ESC, C1 …) and {@link FORMAT_CHARACTERS} are shown as escapes, never written raw to the
 * terminal; tabs and newlines stay (table cells).
 */
const printable = (text: string): string => escaped(text, NOT_PRINTABLE);
/**
 * `text` as one terminal line: every control character, newline and tab included, and {@link FORMAT_CHARACTERS},
 * shown as a `\uXXXX` escape, so a message (an API's, a provider's) can neither break the line, nor drive the
 * terminal, nor reorder what it shows.
 */
export const oneLine = (text: string): string => escaped(text, NOT_ONE_LINE);
/**
 * `value` as `--json` prints it (indented by 2): JSON, with the characters JSON leaves raw in strings that a
 * terminal would act on (DEL, C1 controls such as CSI and OSC, {@link FORMAT_CHARACTERS}) written as `\uXXXX`
 * escapes, which every JSON parser reads back as the same string.
 */
export const terminalSafeJson = (value: unknown): string => escaped(JSON.stringify(value, null, 2), RAW_IN_JSON);
/** Longest lookup error `show` prints in its table (characters; `--json` has it whole). */
const ERROR_CELL_CHARS = 120;
/** Longest reason or error `reconcile` prints in its line (characters; the API stores at most 500). */
const ERROR_LINE_CHARS = 600;
/** `text` cut to `max` UTF-16 units, the last one `…` when cut, never between the two halves of a surrogate pair. */
const clipped = (text: string, max: number): string => {
  if (text.length <= max) return text;
  const end = /[\ud800-\udbff]/.test(text[max - 2] ?? "") ? max - 2 : max - 1; // never half a surrogate pair
  return `${text.slice(0, end)}…`;
};
const str = (v: unknown): string => printable(v === null || v === undefined ? "-" : typeof v === "string" ? v : JSON.stringify(v));
const when = (msSinceEpoch: unknown): string => (typeof msSinceEpoch === "number" ? new Date(msSinceEpoch).toISOString() : "-");
const age = (createdAtMs: unknown, nowMs: number): string => (typeof createdAtMs === "number" ? ms(Math.max(0, nowMs - createdAtMs)) : "-");

/** The status cell: `succeeded (tool error)` for a success whose result is an MCP error result (`toolError`), else the status. */
const statusCell = (e: Row): string => (e["toolError"] === true ? `${str(e["status"])} (tool error)` : str(e["status"]));

function table(head: string[], rows: unknown[][]): string {
  const t = new Table({ head, style: { head: [], border: [], compact: true } });
  for (const r of rows) t.push(r.map(str));
  return t.toString();
}

/**
 * `effects list` as a table (id, status, server, tool, tool call, run, age, lookups, attention, compensates)
 * plus a next-page hint; a tool-error success shows as `succeeded (tool error)`.
 */
export function renderList(page: { effects: Row[]; nextCursor: string | null }, nowMs: number): string {
  if (page.effects.length === 0) return "no effects match";
  const out = table(
    ["effect", "status", "server", "tool", "tool call", "run", "age", "lookups", "attention", "compensates"],
    page.effects.map((e) => [
      e["id"],
      statusCell(e),
      e["serverId"],
      e["toolName"],
      e["toolCallId"],
      e["runId"],
      age(e["createdAtMs"], nowMs),
      e["lookupCount"],
      e["operatorAttention"],
      e["compensatesEffectId"],
    ]),
  );
  return page.nextCursor ? `${out}\nmore: add --cursor ${page.nextCursor}` : out;
}

/**
 * `effects show` as sections: the effect (a tool-error success as `succeeded (tool error)`), its
 * command, attempts, lookups, operator actions, refused operator actions, compensations.
 */
export function renderShow(e: Row): string {
  const command = (e["command"] ?? null) as Row | null;
  const fields: [string, unknown][] = [
    ["effect", e["id"]],
    ["status", statusCell(e)],
    ["resolution", e["resolution"]],
    ["server / tool", `${str(e["serverId"])} / ${str(e["toolName"])}`],
    ["tool call", e["toolCallId"]],
    ["run", e["runId"]],
    ["Driver instance", e["driverInstanceId"]],
    ["idempotency key", e["idempotencyKey"]],
    ["request fingerprint", e["requestFingerprint"]],
    ["compensates", e["compensatesEffectId"]],
    ["operator attention", e["operatorAttention"]],
    ["lookups / next lookup", `${str(e["lookupCount"])} / ${when(e["nextLookupAtMs"])}`],
    ["lookup", e["noLookupReason"] ?? "covered by its server's adapter"],
    [
      "command",
      command
        ? `${str(command["id"])} ${str(command["status"])}${command["error"] ? ` ${str((command["error"] as Row)["code"])}` : ""}`
        : "-",
    ],
    ["result", e["result"] ? str((e["result"] as Row)["outputText"]) : "-"],
    ["reconciliation receipt", e["reconciliationReceipt"]],
  ];
  const kv = new Table({ style: { head: [], border: [], compact: true } });
  for (const [k, v] of fields) kv.push({ [k]: str(v) });
  const list = (key: string) => (Array.isArray(e[key]) ? (e[key] as Row[]) : []);
  const sections = [
    kv.toString(),
    "attempts:",
    list("attempts").length === 0
      ? "  none"
      : table(
          ["attempt", "status", "connection", "started", "finished", "unknown reason"],
          list("attempts").map((a) => [
            a["attempt"],
            a["status"],
            a["connectionId"],
            when(a["startedAtMs"]),
            when(a["finishedAtMs"]),
            a["unknownReason"],
          ]),
        ),
    "lookups:",
    list("reconciliations").length === 0
      ? "  none"
      : table(
          ["at", "trigger", "adapter", "outcome", "reason", "provider operation", "error"],
          list("reconciliations").map((r) => [
            when(r["startedAtMs"]),
            r["trigger"],
            `${str(r["adapterId"])}@${str(r["adapterVersion"])}${r["adapterPackage"] ? ` (${str(r["adapterPackage"])}@${str(r["adapterPackageVersion"])})` : ""}`,
            r["outcome"],
            r["reasonCode"],
            (r["receipt"] as Row | null)?.["providerOperationId"],
            typeof r["error"] === "string" ? oneLine(clipped(r["error"], ERROR_CELL_CHARS)) : null,
          ]),
        ),
    "operator actions:",
    list("operatorActions").length === 0
      ? "  none"
      : table(
          ["at", "actor", "action", "before → after", "outcome", "reason", "receipt"],
          list("operatorActions").map((a) => [
            when(a["createdAtMs"]),
            a["actor"],
            a["action"],
            `${str(a["statusBefore"])} → ${str(a["statusAfter"])}`,
            a["outcome"],
            a["reason"],
            a["receipt"],
          ]),
        ),
    "refused operator actions:",
    list("refusedActions").length === 0
      ? "  none"
      : table(
          ["at", "actor", "action", "refused", "status then", "reason"],
          list("refusedActions").map((a) => [
            when(a["createdAtMs"]),
            a["actor"],
            a["action"],
            a["outcome"],
            a["effectStatus"],
            a["reason"],
          ]),
        ),
    "compensations:",
    list("compensations").length === 0
      ? "  none"
      : table(
          ["effect", "status", "tool", "Driver instance"],
          list("compensations").map((c) => [c["id"], c["status"], c["toolName"], c["driverInstanceId"]]),
        ),
  ];
  return sections.join("\n");
}

/**
 * `effects reconcile`: one line (control characters escaped), the lookup's outcome (with its reason code and, for
 * `still_unknown`, the record's error, when they are there) and the effect's status after it.
 */
export function renderReconcile(r: Row): string {
  const effect = (r["effect"] ?? null) as Row | null;
  const why = [r["reasonCode"], r["error"]]
    .filter((v): v is string => typeof v === "string" && v !== "")
    .map((v) => oneLine(clipped(v, ERROR_LINE_CHARS)));
  const reason = why.length > 0 ? ` (${why.join(": ")})` : "";
  return oneLine(
    `lookup ${str(r["outcome"])}${reason}; effect ${str(effect?.["id"])} is ${str(effect?.["status"])}${effect?.["resolution"] ? ` (${str(effect["resolution"])})` : ""}`,
  );
}

/** `effects resolve`: one line, the effect's new status and resolution. */
export function renderResolve(e: Row): string {
  return `effect ${str(e["id"])} is ${str(e["status"])} (resolution ${str(e["resolution"])})`;
}

/** `effects compensate`: one line, the compensation effect, its tool and the Driver instance it was queued to. */
export function renderCompensate(c: Row): string {
  return `queued compensation ${str(c["compensationEffectId"])} (${str(c["toolName"])}, key ${str(c["idempotencyKey"])}) to Driver instance ${str(c["driverInstanceId"])}`;
}
