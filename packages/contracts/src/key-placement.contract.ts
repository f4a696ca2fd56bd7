// Where an MCP server wants a write's idempotency key: a `_meta` name or a tool argument, and which names are allowed.
import { z } from "zod";
import { isWellFormedText } from "./input-safety.contract.js";
import { IDEMPOTENCY_KEY_META } from "./mcp-execute.contract.js";

/** Names an object literal or a lookup by name treats specially: never a place for the key. */
const RESERVED_PLACEMENT_NAMES = new Set(["__proto__", "constructor", "prototype"]);

/**
 * `_meta` names MCP itself gives a meaning in a request, never a place for the key: `progressToken`
 * (MCP specification 2025-06-18, Basic › Utilities › Progress,
 * https://modelcontextprotocol.io/specification/2025-06-18/basic/utilities/progress: a request that
 * wants progress notifications carries `_meta.progressToken`, and the receiver sends
 * `notifications/progress` naming it). A key placed there would be read as a progress token by the
 * server (and the SDK sets that field itself when it asks for progress).
 */
const MCP_RESERVED_META_NAMES: readonly string[] = ["progressToken"];

/**
 * The `name` of a {@link KeyPlacementSchema}: 1–128 characters of well-formed UTF-16 (no lone
 * surrogate, as the API's input rules require, `isWellFormedText`), none of them a control (`\p{Cc}`),
 * an invisible format character (`\p{Cf}`: bidi controls U+200E/F, U+202A–U+202E, U+2066–U+2069,
 * zero-width characters) or a line/paragraph separator; no leading or trailing whitespace; not
 * `__proto__`, `constructor` or `prototype`. A name that renders differently from what is sent, or
 * that changes an object's prototype instead of adding a field, could hide where the key goes.
 */
export const KeyPlacementNameSchema = z
  .string()
  .min(1)
  .max(128)
  .refine(isWellFormedText, "a key placement name must be well-formed UTF-16 (no lone surrogates)")
  .refine(
    (n) => !/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u.test(n),
    "a key placement name may not contain control or invisible format characters (e.g. bidi overrides such as U+202E)",
  )
  .refine((n) => n.trim() === n, "a key placement name may not start or end with whitespace")
  .refine(
    (n) => !RESERVED_PLACEMENT_NAMES.has(n),
    "__proto__, constructor and prototype are reserved by JavaScript objects and cannot name the key's place",
  );

/**
 * Where an MCP server wants the idempotency key of a write:
 * - `{in: "meta", name}`: in the `tools/call` request's `_meta[name]` (default
 *   `io.mosoo/idempotency-key`; e.g. `idempotency-key` for the agentic-commerce checkout bindings);
 * - `{in: "argument", name}`: as the tool argument `name` (e.g. `idempotency_key`). The Driver adds
 *   it to the arguments it sends; the request fingerprint stays computed over the agent's own
 *   arguments, without it.
 * `name`: 1–128 characters ({@link KeyPlacementNameSchema}): well-formed UTF-16, no control or invisible format
 * characters (bidi overrides and isolates such as U+202E and U+2066, zero-width characters), no
 * surrounding whitespace, and none of the names JavaScript objects treat specially (`__proto__`,
 * `constructor`, `prototype`); a `meta` name is not one MCP reserves ({@link MCP_RESERVED_META_NAMES}:
 * `progressToken`). The same key is sent there on every attempt. An argument name the
 * agent's own arguments already use is refused per call by the Driver (`mcp.server_unavailable`,
 * reason `key_argument_conflict`): the key must never overwrite, or be overwritten by, an argument.
 */
export const KeyPlacementSchema = z.discriminatedUnion("in", [
  z.strictObject({
    in: z.literal("meta"),
    name: KeyPlacementNameSchema.refine(
      (n) => !MCP_RESERVED_META_NAMES.includes(n),
      "_meta.progressToken is reserved by MCP for progress notifications (MCP specification 2025-06-18, basic/utilities/progress); name another _meta field",
    ),
  }),
  z.strictObject({ in: z.literal("argument"), name: KeyPlacementNameSchema }),
]);
/** See {@link KeyPlacementSchema}. */
export type KeyPlacement = z.infer<typeof KeyPlacementSchema>;

/** The default placement: `_meta["io.mosoo/idempotency-key"]`. */
export const DEFAULT_KEY_PLACEMENT: KeyPlacement = Object.freeze({ in: "meta", name: IDEMPOTENCY_KEY_META }) as KeyPlacement;
