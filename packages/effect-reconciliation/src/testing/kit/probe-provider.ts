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

/** The mutable state behind one probe provider: its records, held and fenced keys, and the test switches. */
interface ProbeState {
  readonly settings: ProbeModeSettings;
  readonly records: Map<string, Committed>;
  readonly pending: Set<string>;
  readonly fenced: Set<string>;
  lookupDelayMs: number;
  outage: boolean;
  seq: number;
  latestKey: string | undefined;
}

/** The provider's clock (ms since the epoch). */
const now = (): number => Date.now();

/** The record kept for `key`, or `undefined` (a record past the mode's retention is forgotten on read). */
function currentRecord(state: ProbeState, key: string): Committed | undefined {
  const r = state.records.get(key);
  if (r && now() - r.committedAtMs > state.settings.retentionMs) {
    state.records.delete(key);
    return undefined;
  }
  return r;
}

/**
 * Applies one write received now: the kept result for a same-request repeat, `conflict` for a different
 * request on a kept key, `fenced` for a fenced key, `stale` when it arrived more than `maxInFlightMs` after
 * `sentAtMs`; otherwise commits a new operation.
 */
function applyWrite(state: ProbeState, toolName: string, key: string, args: Record<string, unknown>, sentAtMs: number): KitWriteResult {
  const { settings } = state;
  const fingerprint = fingerprintArguments(args);
  const existing = currentRecord(state, key);
  if (existing)
    return existing.requestFingerprint === fingerprint && existing.toolName === toolName
      ? { status: "committed", result: structuredClone(existing.result) }
      : { status: "refused", reason: "conflict" };
  if (state.fenced.has(key)) return { status: "refused", reason: "fenced" };
  if (settings.maxInFlightMs !== null && now() - sentAtMs > settings.maxInFlightMs) return { status: "refused", reason: "stale" };
  const operationId = `op_${++state.seq}`;
  // JSON text with a fixed key order, as a real provider would print it.
  const result: McpToolResult = {
    content: [{ type: "text", text: JSON.stringify({ operationId, toolName, arguments: args }) }],
    structuredContent: { operationId, arguments: structuredClone(args) },
  };
  state.records.set(key, { toolName, requestFingerprint: fingerprint, operationId, result, committedAtMs: now() });
  state.latestKey = key;
  return { status: "committed", result: structuredClone(result) };
}

/** Waits `ms`; rejects with `signal.reason` if `signal` is (or becomes) aborted first. */
function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
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
}

/** What the lookup API answers for `key` now (a commit shows once past the read lag); fences a miss in fencing modes. */
function answerFor(state: ProbeState, key: string): ProbeLookupAnswer {
  const r = currentRecord(state, key);
  if (r && now() - r.committedAtMs >= state.settings.lookupLagMs) {
    return {
      status: "committed",
      toolName: r.toolName,
      idempotencyKey: key,
      requestFingerprint: r.requestFingerprint,
      operationId: r.operationId,
      result: structuredClone(r.result),
    };
  }
  if (state.pending.has(key)) return { status: "pending", idempotencyKey: key };
  if (state.settings.fences && !r) state.fenced.add(key);
  return { status: "not_found", idempotencyKey: key, fenced: state.fenced.has(key) };
}

/**
 * One write as the provider receives it: in the pending mode the key is held `pendingMs` (plus the delay)
 * and its clock starts at receipt; otherwise a delayed write is judged against when it was sent.
 */
async function probeWrite(
  state: ProbeState,
  toolName: string,
  key: string,
  args: Record<string, unknown>,
  delayMs: number,
): Promise<KitWriteResult> {
  const sentAtMs = now();
  if (state.settings.pendingMs > 0) {
    state.pending.add(key);
    await abortableSleep(state.settings.pendingMs + delayMs);
    state.pending.delete(key);
    return applyWrite(state, toolName, key, args, now()); // the provider held it: its own clock starts at receipt
  }
  if (delayMs > 0) await abortableSleep(delayMs);
  return applyWrite(state, toolName, key, args, sentAtMs);
}

/** The provider's ground truth for `key` (what the kit judges an adapter against). */
function probeTruth(state: ProbeState, key: string): ProviderTruth {
  const r = currentRecord(state, key);
  if (r) return { state: "committed", toolName: r.toolName, requestFingerprint: r.requestFingerprint, result: structuredClone(r.result) };
  if (state.pending.has(key)) return { state: "pending" };
  return { state: "absent", fenced: state.fenced.has(key) };
}

/** Applies the lookup delay (honouring `signal`), then fails while the outage is on (a 503). */
async function awaitLookupApi(state: ProbeState, signal?: AbortSignal): Promise<void> {
  if (state.lookupDelayMs > 0) await abortableSleep(state.lookupDelayMs, signal);
  if (state.outage) throw new Error("probe provider unavailable (503)");
}

/** One page of the list endpoint (see {@link ProbeProvider.listOperations}). */
async function listProbeOperations(
  state: ProbeState,
  cursor: string | undefined,
  signal: AbortSignal | undefined,
): Promise<{ operations: ProbeLookupAnswer[]; nextCursor?: string }> {
  await awaitLookupApi(state, signal);
  const start = cursor === undefined ? 0 : Number(cursor);
  // what the lookup API would show: committed and past the read lag (answerFor fences nothing for a held key)
  const newestFirst = [...state.records.keys()]
    .reverse()
    .filter((key) => currentRecord(state, key) !== undefined)
    .map((key) => answerFor(state, key))
    .filter((a) => a.status === "committed");
  const operations = newestFirst.slice(start, start + PROBE_PAGE_SIZE);
  const next = start + PROBE_PAGE_SIZE;
  return next < newestFirst.length ? { operations, nextCursor: String(next) } : { operations };
}

/** Creates a {@link ProbeProvider} in `mode`. */
export function createProbeProvider(mode: ProbeMode): ProbeProvider {
  const settings = PROBE_MODE_SETTINGS[mode];
  const state: ProbeState = {
    settings,
    records: new Map(),
    pending: new Set(),
    fenced: new Set(),
    lookupDelayMs: 0,
    outage: false,
    seq: 0,
    latestKey: undefined,
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
    write: (toolName, key, args, options = {}) => probeWrite(state, toolName, key, args, options.delayMs ?? 0),
    truth: async (key) => probeTruth(state, key),
    async lookup(key): Promise<ProviderLookupState> {
      const a = answerFor(state, key);
      return a.status === "committed" ? "found" : a.status === "pending" ? "pending" : "not_found";
    },
    async lookupByKey(key, signal) {
      await awaitLookupApi(state, signal);
      return answerFor(state, key);
    },
    latest() {
      return state.latestKey === undefined ? undefined : answerFor(state, state.latestKey);
    },
    setLookupDelay(ms) {
      state.lookupDelayMs = ms;
    },
    setOutage(on) {
      state.outage = on;
    },
    listPageSize: PROBE_PAGE_SIZE,
    forgetEverything() {
      state.records.clear();
    },
    listOperations: (cursor, signal) => listProbeOperations(state, cursor, signal),
  };
}
