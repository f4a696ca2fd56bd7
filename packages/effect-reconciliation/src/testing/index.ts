/**
 * `@mosoo/effect-reconciliation/testing`: the test kit for adapter authors and for the runtime's own
 * tests. A provider double with fault knobs (late commit, lost response, lookup lag, malformed
 * adapter answers), its reference adapter, a manual clock, and the adapter conformance kit: a
 * ground-truth judge (`judgeAdapter`, `runAdapterConformance`), a probe provider in several modes
 * with its reference adapter, and the planted-bug adapters the kit must catch.
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
export { judgeAdapter } from "./kit/kit-runner.js";
export { KIT_CASES } from "./kit/kit-run.contract.js";
export type { KitCaseName, KitOptions, KitReport, KitCaseReport, AdapterCaller } from "./kit/kit-run.contract.js";
export type { KitProvider, ProviderTruth, ProviderLookupState, KitWriteResult } from "./kit/kit-provider.contract.js";
export { measureProvider } from "./kit/kit-measure.js";
export type { ProviderMeasurements } from "./kit/kit-measure.js";
export { createProbeProvider, PROBE_MODES, PROBE_MODE_SETTINGS, PROBE_TOOLS } from "./kit/probe-provider.js";
export type { ProbeProvider, ProbeMode, ProbeModeSettings, ProbeLookupAnswer } from "./kit/probe-provider.js";
export { createProbeAdapter, probeDeclaration, mapProbeAnswer } from "./kit/probe-adapter.js";
export { PLANTED_BUGS, createPlantedBugAdapter } from "./kit/planted-bugs.js";
export type { PlantedBug } from "./kit/planted-bugs.js";
export { runAdapterConformance } from "./adapter-conformance.js";
export { createInProcessAdapterHost } from "./in-process-adapter-host.js";
