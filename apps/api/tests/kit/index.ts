/**
 * The API tests' one test world (see README.md): a migrated store, one manual clock, the runtime
 * (and HTTP app) built on them, a connected Driver, the provider double or the real fixture
 * provider. Tests import from here only.
 */
export { START_MS, createManualClock } from "./clock.js";
export type { ManualClock } from "./clock.js";
export {
  copyMigratedStoreFile,
  createTempDir,
  /** @public documented in README.md (the store part) though no test imports it yet */
  openTestStore,
  openStoreOfKind,
  removeMigratedTemplate,
  STORE_KINDS,
  truncatePgStore,
} from "./store.js";
export type { OpenedStore, Store, StoreKind, TempDir } from "./store.js";
export {
  buildRuntime,
  createTestWorld,
  /** @public documented in README.md (the store part): a world on any store; suites use openDoubleWorld so far */
  openTestWorld,
} from "./world.js";
export type { ReconciliationSettings, Runtime, TestWorld } from "./world.js";
export {
  connectDriver,
  deliverAcceptClaim,
  dispatchUnknownWrite,
  dispatchWrite,
  enqueueCreateIssue,
  finalizeDriver,
  issueArgs,
  issueResult,
  reconnectDriver,
  redeliverAndClaim,
} from "./driver.js";
export type { ConnectedDriver, DispatchedCall } from "./driver.js";
export { commitAtProvider, createDoubleWorld, gateLookups, openDoubleWorld, seedRetentionCanary } from "./provider-double.js";
export type { AnyStoreDoubleWorld, DoubleWorld, DoubleWorldOptions } from "./provider-double.js";
export { createFixtureProviderWorld, executeNextCommand } from "./fixture-provider.js";
export type { FixtureProviderWorld } from "./fixture-provider.js";
export { buildHttpApp } from "./http.js";
export type { HttpApp } from "./http.js";
export { pollUntil, until, waitFor } from "./wait.js";
export { operatorCredentials, operatorNamed } from "./operator.js";
export { runEffectsCli } from "./effects-cli.js";
