export { workspaceRoot, entryPoints } from "./workspace-paths.js";
export { ManagedProcess } from "./managed-process.js";
export type { ManagedProcessOptions, ProcessLine } from "./managed-process.js";
export { startProviderProcess, startApiProcess, startDriverProcess, writeMcpConfig, READY_TIMEOUT_MS } from "./stack.js";
export type { ProviderProcess, ApiProcess, DriverProcess } from "./stack.js";
export { RunApiClient, ProviderControlClient, pollUntil } from "./http-clients.js";
export type { RunViewBody, ProviderStats } from "./http-clients.js";
export { runDriverCrashAfterCommit } from "./scenarios/driver-crash-after-commit.scenario.js";
export type { ScenarioResult, ScenarioOptions, Timeline } from "./scenarios/scenario.types.js";
