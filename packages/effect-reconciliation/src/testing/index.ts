/**
 * `@mosoo/effect-reconciliation/testing`: the test kit for adapter authors and for the runtime's own
 * tests. A provider double with fault knobs (late commit, lost response, lookup lag, malformed
 * adapter answers), its reference adapter, a manual clock, and the adapter conformance suite.
 * `runAdapterConformance` imports vitest: use this subpath from test files only.
 * @module
 */
export { systemClock, createManualClock } from "./double-clock.js";
export type { DoubleClock, ManualClock } from "./double-clock.js";
export { createProviderDouble, ProviderResponseLostError } from "./provider-double.js";
export type {
  ProviderDouble,
  ProviderDoubleOptions,
  ProviderDoubleFaults,
  AdapterFault,
  ProviderWriteOptions,
  ProviderWriteResult,
  ProviderRecord,
  ProviderLookupAnswer,
} from "./provider-double.js";
export { createProviderDoubleAdapter, PROVIDER_DOUBLE_ADAPTER_ID } from "./provider-double-adapter.js";
export { CONFORMANCE_CASES, createConformanceCases } from "./conformance-cases.js";
export type {
  ConformanceCaseName,
  ConformanceProvider,
  ConformanceSkip,
  AdapterConformanceOptions,
  ConformanceCaseResult,
  ConformanceCase,
} from "./conformance-cases.js";
export { runAdapterConformance } from "./adapter-conformance.js";
