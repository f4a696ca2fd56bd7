// The handle of a process's tracing, as startTracing returns it.

/** A started (or deliberately not started) tracer of one process. */
export interface Tracing {
  /** True when the SDK runs and spans are exported; false: the API's no-op tracer (nothing recorded). */
  readonly enabled: boolean;
  /** Exports what is still buffered (waiting at most 2000 ms) and unregisters the SDK. Never throws. */
  shutdown(): Promise<void>;
}
