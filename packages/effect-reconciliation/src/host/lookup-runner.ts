// Calls an adapter once under a timeout and races it, so a hung or late adapter is never waited for.
import { setMaxListeners } from "node:events";
import type { LookupContext, LookupRequest, ReconciliationAdapter } from "../author/adapter.contract.js";
import { AdapterCrashedError } from "./adapter-source.contract.js";

/** @internal How one adapter call ended, before its answer is validated. */
export type LookupRun =
  { kind: "answered"; value: unknown } | { kind: "threw"; error: unknown } | { kind: "timed_out" } | { kind: "cancelled" };

/**
 * @internal Calls `adapter.lookup` once with a signal that aborts after `timeoutMs` ms (or when
 * `outerSignal` aborts), and races the call against that signal: an adapter that ignores the
 * signal is not waited for (its late settlement is observed and dropped, never unhandled).
 * A rejection after the signal aborted counts as the timeout/cancellation, not an adapter error,
 * unless it is an `AdapterCrashedError` (the isolating host reported the worker's own death, e.g. its
 * heap limit, which is `adapter_crashed` whatever the clock says).
 * Never throws.
 */
export async function runLookup(
  adapter: ReconciliationAdapter,
  request: LookupRequest,
  logger: LookupContext["logger"],
  timeoutMs: number,
  outerSignal: AbortSignal | undefined,
): Promise<LookupRun> {
  return runBoundedAdapterCall((context) => adapter.lookup(request, context), logger, timeoutMs, outerSignal);
}

/** The timeout signal calls started now share (see {@link batchTimeoutSignal}). */
let sharedTimeout: { timeoutMs: number; createdAtMs: number; signal: AbortSignal } | undefined;
/** How long (ms) after its creation a timeout signal is shared by further calls with the same timeout. */
const SHARE_TIMEOUT_WITHIN_MS = 1;

/**
 * @internal A signal that aborts `timeoutMs` ms after it was created, shared by the calls that start
 * within {@link SHARE_TIMEOUT_WITHIN_MS} of each other with the same timeout (a burst of lookups, e.g.
 * one lease batch, runs under one timer instead of one per call). A call therefore gets at least
 * `timeoutMs − 1` ms and never more than `timeoutMs`: the bound is never extended.
 */
function batchTimeoutSignal(timeoutMs: number): AbortSignal {
  const nowMs = performance.now();
  const shared = sharedTimeout;
  if (
    shared !== undefined &&
    shared.timeoutMs === timeoutMs &&
    nowMs - shared.createdAtMs < SHARE_TIMEOUT_WITHIN_MS &&
    !shared.signal.aborted
  )
    return shared.signal;
  const signal = AbortSignal.timeout(timeoutMs);
  // every call sharing it adds its own listeners (removed when it settles): no "possible leak" warning
  setMaxListeners(0, signal);
  sharedTimeout = { timeoutMs, createdAtMs: nowMs, signal };
  return signal;
}

/**
 * @internal The bounded-call core of {@link runLookup}, for any adapter call that takes a
 * `LookupContext` (lookup, compensation planning). Same timeout and race rules; calls started within
 * 1 ms of each other share one timeout timer ({@link batchTimeoutSignal}). Never throws.
 */
export async function runBoundedAdapterCall(
  callAdapter: (context: LookupContext) => Promise<unknown> | unknown,
  logger: LookupContext["logger"],
  timeoutMs: number,
  outerSignal: AbortSignal | undefined,
): Promise<LookupRun> {
  const timeoutSignal = batchTimeoutSignal(timeoutMs);
  const signal = outerSignal ? AbortSignal.any([timeoutSignal, outerSignal]) : timeoutSignal;
  const abortedKind = (): LookupRun => (outerSignal?.aborted && !timeoutSignal.aborted ? { kind: "cancelled" } : { kind: "timed_out" });
  if (signal.aborted) return abortedKind();

  let removeListener = (): void => {};
  const aborted = new Promise<"aborted">((resolve) => {
    // a synthetic "abort" event (adapter code may dispatch one on the signal it was handed) is not an abort
    const onAbort = (): void => {
      if (signal.aborted) resolve("aborted");
    };
    signal.addEventListener("abort", onAbort);
    removeListener = () => signal.removeEventListener("abort", onAbort);
  });

  let call: Promise<unknown>;
  try {
    call = Promise.resolve(callAdapter({ signal, logger }));
  } catch (error) {
    removeListener();
    return { kind: "threw", error };
  }
  const settled = call.then(
    (value): LookupRun => ({ kind: "answered", value }),
    (error: unknown): LookupRun => ({ kind: "threw", error }),
  );

  try {
    const first = await Promise.race([settled, aborted]);
    if (first === "aborted") return abortedKind();
    // A worker death the host reported before the abort (e.g. its heap limit) stays a crash.
    if (first.kind === "threw" && signal.aborted && !AdapterCrashedError.is(first.error)) return abortedKind();
    return first;
  } finally {
    removeListener();
  }
}
