/** Shapes the console reads from `/console/api/*`, derived from the route table's response schemas. */
import type { ConsoleAnswer } from "./api.js";

/** One page of the list (`effects`, newest first); `nextCursor` continues it. */
export type EffectPage = ConsoleAnswer<"consoleList">;
/** One effect with its whole history (the operator service's `show`). */
export type EffectDetail = ConsoleAnswer<"consoleShow">;
/** Counts for the list's header and charts. */
export type ConsoleStats = ConsoleAnswer<"consoleStats">;
/** The signed-in session: `actor` (the operator credential's name), `scopes`, `csrfToken`, `expiresAtMs`. */
export type SessionInfo = ConsoleAnswer<"consoleSession">;
