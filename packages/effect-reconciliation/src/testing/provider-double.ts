// An in-memory provider keyed by idempotency key, with fault knobs and adapter misbehaviours, for runtime and adapter tests.
import { fingerprintArguments, type McpToolResult } from "@mosoo/contracts";
import type { KeyFencing, LookupRequest } from "../author/adapter.contract.js";
import { systemClock, type DoubleClock } from "./double-clock.js";

/**
 * What one write attempt at the provider double did:
 * - `committed`: the write is recorded (`replayed: true` when the key already held the same
 *   request, so nothing new was written, as Stripe / EC2 replay the original);
 * - `refused`: `reason: "fenced"` (a lookup fenced the key) or `"stale"` (it arrived later than the
 *   provider's maximum in-flight time after it was sent, as an OASIS/ACS 412);
 * - `conflict`: the key holds a request with another fingerprint (nothing written).
 */
export type ProviderWriteResult =
  | { status: "committed"; replayed: boolean; operationId: string; result: McpToolResult }
  | { status: "refused"; reason: "fenced" | "stale" }
  | { status: "conflict"; recordedFingerprint: string };

/** A write the double holds for one idempotency key. */
export interface ProviderRecord {
  idempotencyKey: string;
  arguments: Record<string, unknown>;
  /** `fingerprintArguments(arguments)`: 64 lowercase hex. */
  requestFingerprint: string;
  operationId: string;
  result: McpToolResult;
  /** ms since the epoch (double clock). */
  committedAtMs: number;
}

/** What a lookup by key at the provider double saw. `fenced` is true when the key is (now) fenced. */
export type ProviderLookupAnswer = { found: true; record: ProviderRecord } | { found: false; fenced: boolean };

/** The thrown value of a write whose response was lost (`loseResponse`): the write may have happened. */
export class ProviderResponseLostError extends Error {
  override readonly name = "ProviderResponseLostError";
  constructor(readonly idempotencyKey: string) {
    super(`the provider's response for key ${idempotencyKey} was lost`);
  }
}

/**
 * Fault knobs of the double, read at each call (change them with `setFaults`):
 * - `lookupLagMs` (ms, default 0): a lookup answers "not found" for this long after a commit,
 *   like an eventually consistent read (research/anchors.md §4: EC2 DescribeInstances);
 * - `lookupDelayMs` (ms, default 0): the double's adapter waits this long (on the double's clock,
 *   honouring its abort signal) before reading;
 * - `adapterFault` (default `none`): how the double's adapter misbehaves, see {@link AdapterFault};
 * - `answerOverride?`: when set, the adapter resolves with its return value, verbatim.
 */
export interface ProviderDoubleFaults {
  lookupLagMs: number;
  lookupDelayMs: number;
  adapterFault: AdapterFault;
  answerOverride?: ((request: LookupRequest) => unknown) | undefined;
}

/**
 * Misbehaviours of the double's adapter (docs/DESIGN.md §5 rows): `garbage` (schema-invalid object),
 * `oversized_receipt` (receipt over `MAX_RECEIPT_BYTES`), `oversized_result` (result over
 * `MAX_RESULT_BYTES`), `wrong_key` / `wrong_tool` (answers about another key / tool),
 * `conflicting_fingerprint` (receipt records another request fingerprint), `throws` (synchronous
 * throw), `rejects` (rejected promise), `hangs_ignoring_signal` (never settles, ignores the signal).
 */
export type AdapterFault =
  | "none"
  | "garbage"
  | "oversized_receipt"
  | "oversized_result"
  | "wrong_key"
  | "wrong_tool"
  | "conflicting_fingerprint"
  | "throws"
  | "rejects"
  | "hangs_ignoring_signal";

/**
 * Options of {@link createProviderDouble}:
 * - `toolName` (default `create_issue`): the one write tool it serves;
 * - `clock` (default the system clock; use `createManualClock()` for deterministic tests);
 * - `retentionWindowMs` (default 24 h): a commit is forgotten once older than this (Stripe prunes
 *   keys after ≥ 24 h); fences are never forgotten;
 * - `keyFencing` (default `lookup_fences_key`): with `lookup_fences_key` a lookup that finds
 *   nothing fences the key; with `max_in_flight` a write applied more than `maxInFlightMs` after it
 *   was sent is refused as `stale` (and lookups fence nothing);
 * - `faults`: initial {@link ProviderDoubleFaults}.
 */
export interface ProviderDoubleOptions {
  toolName?: string;
  clock?: DoubleClock;
  retentionWindowMs?: number;
  keyFencing?: KeyFencing;
  faults?: Partial<ProviderDoubleFaults>;
}

/** Options of one write: `delayMs` (apply it this many ms later: a late commit), `loseResponse`. */
export interface ProviderWriteOptions {
  delayMs?: number;
  loseResponse?: boolean;
}

/**
 * An in-memory provider keyed by idempotency key, with fault knobs, for tests of the runtime and of
 * adapters. It dedupes on the key (one applied write per key at most) and counts everything.
 */
export interface ProviderDouble {
  /** The one write tool it serves. */
  readonly toolName: string;
  /** Its time source (also used by its adapter for `observedAt` and `lookupDelayMs`). */
  readonly clock: DoubleClock;
  /** How long (ms) it remembers a commit. */
  readonly retentionWindowMs: number;
  /** Whether a lookup fences a key, or its maximum in-flight time. */
  readonly keyFencing: KeyFencing;
  /** The current fault knobs (read-only view; see `setFaults`). */
  readonly faults: Readonly<ProviderDoubleFaults>;
  /**
   * Sends a write with `idempotencyKey` and `args`. Applied now, or `delayMs` later on the double's
   * clock (a late commit a fence can still stop). With `loseResponse` the write is applied but the
   * promise rejects with {@link ProviderResponseLostError}. Resolves when the write is applied.
   */
  commit(idempotencyKey: string, args: Record<string, unknown>, options?: ProviderWriteOptions): Promise<ProviderWriteResult>;
  /** A lookup by key, as the provider's "get by idempotency key" API would answer (counted). */
  lookup(idempotencyKey: string): ProviderLookupAnswer;
  /** Fences `idempotencyKey`: every later write with it is refused. */
  fence(idempotencyKey: string): void;
  /** True once the key is fenced (by `fence` or by a lookup that found nothing, with `lookup_fences_key`). */
  isFenced(idempotencyKey: string): boolean;
  /** The write held for the key, if any (not counted as a lookup; ignores lag, honours retention). */
  record(idempotencyKey: string): ProviderRecord | undefined;
  /** Writes applied for the key (a replay or a refusal is not a write): 0 or 1 unless forgotten and re-sent. */
  writeCount(idempotencyKey: string): number;
  /** Writes applied for all keys. */
  totalWriteCount(): number;
  /** Lookups made for the key. */
  lookupCount(idempotencyKey: string): number;
  /** Changes some fault knobs. */
  setFaults(faults: Partial<ProviderDoubleFaults>): void;
}

/** The mutable state behind one provider double: its settings, kept writes, fences and counters. */
interface DoubleState {
  readonly clock: DoubleClock;
  readonly retentionWindowMs: number;
  readonly keyFencing: KeyFencing;
  readonly faults: ProviderDoubleFaults;
  readonly records: Map<string, ProviderRecord>;
  readonly fenced: Set<string>;
  readonly writes: Map<string, number>;
  readonly lookups: Map<string, number>;
  operationSeq: number;
}

/** The write kept for `key`, or `undefined` (a write older than the retention window is forgotten on read). */
function currentRecord(state: DoubleState, key: string): ProviderRecord | undefined {
  const record = state.records.get(key);
  if (record && state.clock.now() - record.committedAtMs > state.retentionWindowMs) {
    state.records.delete(key);
    return undefined;
  }
  return record;
}

/**
 * Applies one write now: a replay for the same request on a kept key, `conflict` for another request,
 * `fenced` for a fenced key, `stale` under `max_in_flight` when it arrived too long after `sentAtMs`;
 * otherwise records (and counts) a new operation.
 */
function applyWrite(state: DoubleState, key: string, args: Record<string, unknown>, sentAtMs: number): ProviderWriteResult {
  const { clock, keyFencing } = state;
  const fingerprint = fingerprintArguments(args);
  const existing = currentRecord(state, key);
  if (existing) {
    return existing.requestFingerprint === fingerprint
      ? { status: "committed", replayed: true, operationId: existing.operationId, result: structuredClone(existing.result) }
      : { status: "conflict", recordedFingerprint: existing.requestFingerprint };
  }
  if (state.fenced.has(key)) return { status: "refused", reason: "fenced" };
  if (keyFencing.kind === "max_in_flight" && clock.now() - sentAtMs > keyFencing.maxInFlightMs)
    return { status: "refused", reason: "stale" };
  const operationId = `op_${++state.operationSeq}`;
  const result: McpToolResult = {
    content: [{ type: "text", text: `created ${operationId}` }],
    structuredContent: { operationId, arguments: structuredClone(args) },
  };
  state.records.set(key, {
    idempotencyKey: key,
    arguments: structuredClone(args),
    requestFingerprint: fingerprint,
    operationId,
    result,
    committedAtMs: clock.now(),
  });
  state.writes.set(key, (state.writes.get(key) ?? 0) + 1);
  return { status: "committed", replayed: false, operationId, result: structuredClone(result) };
}

/** Sends one write (see {@link ProviderDouble.commit}): applied now or `delayMs` later on the double's clock. */
function commitWrite(
  state: DoubleState,
  key: string,
  args: Record<string, unknown>,
  writeOptions: ProviderWriteOptions,
): Promise<ProviderWriteResult> {
  const sentAtMs = state.clock.now();
  const deliver = (outcome: ProviderWriteResult): ProviderWriteResult => {
    if (writeOptions.loseResponse) throw new ProviderResponseLostError(key);
    return outcome;
  };
  const delayMs = writeOptions.delayMs ?? 0;
  if (delayMs <= 0) {
    try {
      return Promise.resolve(deliver(applyWrite(state, key, args, sentAtMs)));
    } catch (error) {
      return Promise.reject(error);
    }
  }
  return new Promise((resolve, reject) => {
    state.clock.setTimer(() => {
      try {
        resolve(deliver(applyWrite(state, key, args, sentAtMs)));
      } catch (error) {
        reject(error);
      }
    }, delayMs);
  });
}

/** A counted lookup by key (see {@link ProviderDouble.lookup}); a miss fences the key under `lookup_fences_key`. */
function lookupByKey(state: DoubleState, key: string): ProviderLookupAnswer {
  state.lookups.set(key, (state.lookups.get(key) ?? 0) + 1);
  const record = currentRecord(state, key);
  if (record && state.clock.now() - record.committedAtMs >= state.faults.lookupLagMs)
    return { found: true, record: structuredClone(record) };
  if (state.keyFencing.kind === "lookup_fences_key") state.fenced.add(key);
  return { found: false, fenced: state.fenced.has(key) };
}

/** Creates a {@link ProviderDouble}; see {@link ProviderDoubleOptions} for the defaults. */
export function createProviderDouble(options: ProviderDoubleOptions = {}): ProviderDouble {
  const state: DoubleState = {
    clock: options.clock ?? systemClock,
    retentionWindowMs: options.retentionWindowMs ?? 24 * 60 * 60 * 1000,
    keyFencing: options.keyFencing ?? { kind: "lookup_fences_key" },
    faults: { lookupLagMs: 0, lookupDelayMs: 0, adapterFault: "none", ...options.faults },
    records: new Map(),
    fenced: new Set(),
    writes: new Map(),
    lookups: new Map(),
    operationSeq: 0,
  };
  const { clock, retentionWindowMs, keyFencing, faults, fenced, writes, lookups } = state;
  return {
    toolName: options.toolName ?? "create_issue",
    clock,
    retentionWindowMs,
    keyFencing,
    get faults(): Readonly<ProviderDoubleFaults> {
      return { ...faults };
    },
    commit: (key, args, writeOptions = {}) => commitWrite(state, key, args, writeOptions),
    lookup: (key) => lookupByKey(state, key),
    fence(key): void {
      fenced.add(key);
    },
    isFenced: (key) => fenced.has(key),
    record(key): ProviderRecord | undefined {
      const record = currentRecord(state, key);
      return record ? structuredClone(record) : undefined;
    },
    writeCount: (key) => writes.get(key) ?? 0,
    totalWriteCount: () => [...writes.values()].reduce((sum, n) => sum + n, 0),
    lookupCount: (key) => lookups.get(key) ?? 0,
    setFaults(next): void {
      Object.assign(faults, next);
    },
  };
}
