// The kit's in-memory probe provider in four modes (fencing, in flight, pending, short retention), with its lookup API.
import { fingerprintArguments, type McpToolResult } from "@mosoo/contracts";
import type { KitProvider, KitWriteResult, ProviderLookupState, ProviderTruth } from "./kit-provider.contract.js";

/**
 * The provider modes the kit runs adapters against (real time, small windows):
 * - `fencing`: a lookup miss fences the key; lookups see a commit at once; keys kept 1 h;
 * - `in_flight`: no fence; a write received more than `maxInFlightMs` (300 ms) after it was sent is
 *   refused as stale; lookups lag 120 ms behind commits;
 * - `pending`: fencing, but every write is `pending` for 150 ms before it commits (a lookup then
 *   answers `pending` and fences nothing);
 * - `short_retention`: fencing; keys forgotten 800 ms after their commit.
 */
export const PROBE_MODES = ["fencing", "in_flight", "pending", "short_retention"] as const;
/** One of {@link PROBE_MODES}. */
export type ProbeMode = (typeof PROBE_MODES)[number];

/** The numbers behind each {@link ProbeMode} (ms). */
export interface ProbeModeSettings {
  fences: boolean;
  maxInFlightMs: number | null;
  lookupLagMs: number;
  pendingMs: number;
  retentionMs: number;
}

/** The settings of each mode. */
export const PROBE_MODE_SETTINGS: Readonly<Record<ProbeMode, ProbeModeSettings>> = {
  fencing: { fences: true, maxInFlightMs: null, lookupLagMs: 0, pendingMs: 0, retentionMs: 3_600_000 },
  in_flight: { fences: false, maxInFlightMs: 300, lookupLagMs: 120, pendingMs: 0, retentionMs: 3_600_000 },
  pending: { fences: true, maxInFlightMs: null, lookupLagMs: 0, pendingMs: 150, retentionMs: 3_600_000 },
  short_retention: { fences: true, maxInFlightMs: null, lookupLagMs: 0, pendingMs: 0, retentionMs: 800 },
};

/** How many operations one page of the probe provider's list endpoint holds (`listOperations`). */
const PROBE_PAGE_SIZE = 10;

/** The tools of the probe provider: two write tools sharing one key space. */
export const PROBE_TOOLS = ["create_ticket", "refund_payment"] as const;

/**
 * What the probe provider's lookup API answers (what an adapter reads):
 * `{status: "committed", toolName, idempotencyKey, requestFingerprint, operationId, result}` |
 * `{status: "pending", idempotencyKey}` | `{status: "not_found", idempotencyKey, fenced}`.
 */
export type ProbeLookupAnswer =
  | {
      status: "committed";
      toolName: string;
      idempotencyKey: string;
      requestFingerprint: string;
      operationId: string;
      result: McpToolResult;
    }
  | { status: "pending"; idempotencyKey: string }
  | { status: "not_found"; idempotencyKey: string; fenced: boolean };

interface Committed {
  toolName: string;
  requestFingerprint: string;
  operationId: string;
  result: McpToolResult;
  committedAtMs: number;
}

/** An in-memory provider in one {@link ProbeMode}: the kit's {@link KitProvider} plus the lookup API adapters call. */
export interface ProbeProvider extends KitProvider {
  readonly mode: ProbeMode;
  readonly settings: ProbeModeSettings;
  /** The provider's lookup API (honours `signal` while `setLookupDelay` slows it). Fences a miss in fencing modes. */
  lookupByKey(idempotencyKey: string, signal?: AbortSignal): Promise<ProbeLookupAnswer>;
  /** The most recent commit of any key (what a buggy "latest record" adapter reads). */
  latest(): ProbeLookupAnswer | undefined;
  /**
   * The provider's list endpoint: committed operations newest first, {@link PROBE_PAGE_SIZE} per page;
   * `cursor` is the previous page's `nextCursor` (absent on the last page). Honours `signal` and the outage.
   */
  listOperations(cursor?: string, signal?: AbortSignal): Promise<{ operations: ProbeLookupAnswer[]; nextCursor?: string }>;
}

/** Creates a {@link ProbeProvider} in `mode`. */
export function createProbeProvider(mode: ProbeMode): ProbeProvider {
  const settings = PROBE_MODE_SETTINGS[mode];
  const records = new Map<string, Committed>();
  const pending = new Set<string>();
  const fenced = new Set<string>();
  let lookupDelayMs = 0;
  let outage = false;
  let seq = 0;
  let latestKey: string | undefined;
  const now = (): number => Date.now();

  const current = (key: string): Committed | undefined => {
    const r = records.get(key);
    if (r && now() - r.committedAtMs > settings.retentionMs) {
      records.delete(key);
      return undefined;
    }
    return r;
  };

  const apply = (toolName: string, key: string, args: Record<string, unknown>, sentAtMs: number): KitWriteResult => {
    const fingerprint = fingerprintArguments(args);
    const existing = current(key);
    if (existing)
      return existing.requestFingerprint === fingerprint && existing.toolName === toolName
        ? { status: "committed", result: structuredClone(existing.result) }
        : { status: "refused", reason: "conflict" };
    if (fenced.has(key)) return { status: "refused", reason: "fenced" };
    if (settings.maxInFlightMs !== null && now() - sentAtMs > settings.maxInFlightMs) return { status: "refused", reason: "stale" };
    const operationId = `op_${++seq}`;
    // JSON text with a fixed key order, as a real provider would print it.
    const result: McpToolResult = {
      content: [{ type: "text", text: JSON.stringify({ operationId, toolName, arguments: args }) }],
      structuredContent: { operationId, arguments: structuredClone(args) },
    };
    records.set(key, { toolName, requestFingerprint: fingerprint, operationId, result, committedAtMs: now() });
    latestKey = key;
    return { status: "committed", result: structuredClone(result) };
  };

  const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const t = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = (): void => {
        clearTimeout(t);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    });

  const answerFor = (key: string): ProbeLookupAnswer => {
    const r = current(key);
    if (r && now() - r.committedAtMs >= settings.lookupLagMs) {
      return {
        status: "committed",
        toolName: r.toolName,
        idempotencyKey: key,
        requestFingerprint: r.requestFingerprint,
        operationId: r.operationId,
        result: structuredClone(r.result),
      };
    }
    if (pending.has(key)) return { status: "pending", idempotencyKey: key };
    if (settings.fences && !r) fenced.add(key);
    return { status: "not_found", idempotencyKey: key, fenced: fenced.has(key) };
  };

  return {
    name: `probe provider (${mode})`,
    mode,
    settings,
    tools: PROBE_TOOLS,
    hasPendingState: settings.pendingMs > 0,
    supportsDelayedWrites: true,
    argumentSets: (toolName) => [
      { title: `${toolName} one`, amount: 100, meta: { tags: ["a", "b"], note: null } },
      { title: `${toolName} two`, amount: 250, meta: { tags: [], note: "second" } },
    ],
    async write(toolName, key, args, options = {}) {
      const sentAtMs = now();
      const delayMs = options.delayMs ?? 0;
      if (settings.pendingMs > 0) {
        pending.add(key);
        await sleep(settings.pendingMs + delayMs);
        pending.delete(key);
        return apply(toolName, key, args, now()); // the provider held it: its own clock starts at receipt
      }
      if (delayMs > 0) await sleep(delayMs);
      return apply(toolName, key, args, sentAtMs);
    },
    async truth(key): Promise<ProviderTruth> {
      const r = current(key);
      if (r)
        return { state: "committed", toolName: r.toolName, requestFingerprint: r.requestFingerprint, result: structuredClone(r.result) };
      if (pending.has(key)) return { state: "pending" };
      return { state: "absent", fenced: fenced.has(key) };
    },
    async lookup(key): Promise<ProviderLookupState> {
      const a = answerFor(key);
      return a.status === "committed" ? "found" : a.status === "pending" ? "pending" : "not_found";
    },
    async lookupByKey(key, signal) {
      if (lookupDelayMs > 0) await sleep(lookupDelayMs, signal);
      if (outage) throw new Error("probe provider unavailable (503)");
      return answerFor(key);
    },
    latest() {
      return latestKey === undefined ? undefined : answerFor(latestKey);
    },
    setLookupDelay(ms) {
      lookupDelayMs = ms;
    },
    setOutage(on) {
      outage = on;
    },
    listPageSize: PROBE_PAGE_SIZE,
    forgetEverything() {
      records.clear();
    },
    async listOperations(cursor, signal) {
      if (lookupDelayMs > 0) await sleep(lookupDelayMs, signal);
      if (outage) throw new Error("probe provider unavailable (503)");
      const start = cursor === undefined ? 0 : Number(cursor);
      // what the lookup API would show: committed and past the read lag (answerFor fences nothing for a held key)
      const newestFirst = [...records.keys()]
        .reverse()
        .filter((key) => current(key) !== undefined)
        .map(answerFor)
        .filter((a) => a.status === "committed");
      const operations = newestFirst.slice(start, start + PROBE_PAGE_SIZE);
      const next = start + PROBE_PAGE_SIZE;
      return next < newestFirst.length ? { operations, nextCursor: String(next) } : { operations };
    },
  };
}
