// The provider as the conformance kit drives it: writes, its lookup state, and the ground truth every answer is judged against.
import type { McpToolResult } from "@mosoo/contracts";

/**
 * What a provider really holds for one idempotency key at this moment, read WITHOUT its lookup API
 * (no lookup counted, no fence written, no read lag): the ground truth the kit judges every adapter
 * answer against.
 * - `committed`: a write of `toolName` with `requestFingerprint` (64 hex) committed; `result` is the
 *   MCP tool result it returned;
 * - `pending`: the provider holds the request and may still commit it;
 * - `absent`: nothing committed; `fenced: true` when the key can never commit.
 */
export type ProviderTruth =
  | { state: "committed"; toolName: string; requestFingerprint: string; result: unknown }
  | { state: "pending" }
  | { state: "absent"; fenced: boolean };

/** What the provider's own lookup API says (for the kit's measurements). */
export type ProviderLookupState = "found" | "pending" | "not_found";

/** The result of one write: committed with the provider's result, or refused (fenced, stale, conflict). */
export type KitWriteResult = { status: "committed"; result: McpToolResult } | { status: "refused"; reason: string };

/**
 * The provider (or its sandbox / double) behind the adapter under test, as the kit drives it:
 * - `name`: for reports;
 * - `tools`: the write tools to exercise (use several when the adapter declares several);
 * - `argumentSets(tool)`: at least two different argument objects for that tool;
 * - `write(tool, key, args, {delayMs?})`: sends the write with the key; with `delayMs` the
 *   provider receives it now but commits it that many ms later (a late commit a fence can stop;
 *   omit support with `supportsDelayedWrites: false`); resolves when it committed or was refused;
 * - `truth(key)`: {@link ProviderTruth};
 * - `lookup(key)`: the provider's own lookup API (it may fence a missed key, as the adapter's would);
 * - `setLookupDelay?(ms)`: slows the provider's lookup answers (the abort case), 0 to restore;
 * - `setOutage?(on)`: while on, the provider's lookup API fails (unreachable, 5xx, garbage): the
 *   outage case checks that an adapter confirms nothing it could not ask (omit it when the provider
 *   or its sandbox cannot simulate an outage; the case is then skipped with a note);
 * - `listPageSize?`: the page size of the provider's list endpoint (default 10): the kit pushes a
 *   committed key behind more than two pages of newer writes, so an adapter that pages through a list
 *   must read past page one;
 * - `forgetEverything?()`: the provider drops every key it holds, as one that forgets sooner than the
 *   adapter declared would (the forgetful-provider case; omit it when the provider cannot).
 */
export interface KitProvider {
  name: string;
  tools: readonly string[];
  argumentSets(toolName: string): Array<Record<string, unknown>>;
  write(toolName: string, idempotencyKey: string, args: Record<string, unknown>, options?: { delayMs?: number }): Promise<KitWriteResult>;
  truth(idempotencyKey: string): Promise<ProviderTruth>;
  lookup(idempotencyKey: string): Promise<ProviderLookupState>;
  setLookupDelay?(ms: number): void | Promise<void>;
  setOutage?(on: boolean): void | Promise<void>;
  listPageSize?: number;
  forgetEverything?(): void | Promise<void>;
  supportsDelayedWrites?: boolean;
  /** True when writes go through a `pending` state the kit can observe (the pending case runs). */
  hasPendingState?: boolean;
}
