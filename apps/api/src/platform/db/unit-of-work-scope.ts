// The process's one AsyncLocalStorage that tells which store's unit of work the current call chain runs inside.
import { AsyncLocalStorage } from "node:async_hooks";

/**
 * The ONE `AsyncLocalStorage` of the process that tracks which store's unit of work the current
 * async call chain runs inside (its value: that store). Every store implementation shares it: on
 * Node 20 each `AsyncLocalStorage` that has ever run is consulted when any promise of the process
 * is created, so one instance per store made every store opened later (a test world, a restart)
 * slow down every promise after it — the 1,000-run model test's 250-run chunks grew from 43 s to
 * 305 s. With one instance the cost is constant.
 */
const scope = new AsyncLocalStorage<object>();

/** Runs `fn` inside a unit of work of `store`: {@link isInUnitOfWork}`(store)` is true in every async call it makes. */
export function runInUnitOfWork<T>(store: object, fn: () => T): T {
  return scope.run(store, fn);
}

/** True when the current async call chain runs inside a unit of work of `store` (a nested call would wait on itself). */
export function isInUnitOfWork(store: object): boolean {
  return scope.getStore() === store;
}
