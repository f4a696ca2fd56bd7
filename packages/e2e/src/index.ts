// The e2e package's public entry: process management, the stack's processes, HTTP clients and the scenarios.
export { workspaceRoot, entryPoints } from "./workspace-paths.js";
export { ManagedProcess } from "./managed-process.js";
export type { ManagedProcessOptions, ProcessLine } from "./managed-process.js";
export {
  startProviderProcess,
  startApiProcess,
  startApiInstances,
  storeEnv,
  startDriverProcess,
  writeMcpConfig,
  READY_TIMEOUT_MS,
  newStackCredentials,
  credentialsEnv,
} from "./stack.js";
export type { ProviderProcess, ApiProcess, ApiStoreLocation, DriverProcess, StackCredentials } from "./stack.js";
export { RunApiClient, ProviderControlClient, pollUntil } from "./http-clients.js";
export type { RunViewBody, ProviderStats } from "./http-clients.js";
export { runCrashScenario } from "./scenarios/crash-scenario.js";
export type { CrashScenarioSpec } from "./scenarios/crash-scenario.js";
export { CRASH_SCENARIOS } from "./scenarios/crash-scenarios.js";
export type { ScenarioResult, ScenarioOptions, Timeline } from "./scenarios/scenario.types.js";
export { runOperatorResolutionScenario, OPERATOR_RESOLUTION_SCENARIO } from "./scenarios/operator-resolution.scenario.js";
export { runScaleOutScenario, SCALE_OUT_SCENARIO } from "./scenarios/scale-out.scenario.js";
export { runTaskHandleScenario, TASK_HANDLE_SCENARIO } from "./scenarios/task-handle.scenario.js";
export { runRetentionCanaryScenario, RETENTION_CANARY_SCENARIO } from "./scenarios/retention-canary.scenario.js";
