import { z } from "zod";
import { IDEMPOTENCY_KEY_META } from "./mcp-execute.contract.js";

/**
 * Where an MCP server wants the idempotency key of a write (docs/DESIGN.md §4; issue 15 item 5):
 * - `{in: "meta", name}`: in the `tools/call` request's `_meta[name]` (default
 *   `io.mosoo/idempotency-key`; e.g. `idempotency-key` for the agentic-commerce checkout bindings);
 * - `{in: "argument", name}`: as the tool argument `name` (e.g. `idempotency_key`). The Driver adds
 *   it to the arguments it sends; the request fingerprint stays computed over the agent's own
 *   arguments, without it.
 * `name`: 1–128 characters. The same key is sent there on every attempt.
 */
export const KeyPlacementSchema = z.discriminatedUnion("in", [
  z.strictObject({ in: z.literal("meta"), name: z.string().min(1).max(128) }),
  z.strictObject({ in: z.literal("argument"), name: z.string().min(1).max(128) }),
]);
/** See {@link KeyPlacementSchema}. */
export type KeyPlacement = z.infer<typeof KeyPlacementSchema>;

/** The default placement: `_meta["io.mosoo/idempotency-key"]`. */
export const DEFAULT_KEY_PLACEMENT: KeyPlacement = Object.freeze({ in: "meta", name: IDEMPOTENCY_KEY_META }) as KeyPlacement;
