/**
 * `@mosoo/fixture-provider`: a real MCP server (official SDK) modelling an issue tracker, used by
 * tests and the demo. `createIssue` records each write durably under the Mosoo idempotency key
 * (`_meta["io.mosoo/idempotency-key"]`), `getOperation` looks a write up by that key (optionally
 * fencing a missed key forever), and fault switches simulate late commits, held or dropped
 * responses and crashes. Serve it over HTTP with {@link startFixtureProvider} or over stdio with
 * {@link startFixtureProviderStdio} (or `src/main.ts`).
 */
export { startFixtureProvider } from "./fixture-http-server.js";
export type { StartFixtureProviderOptions, FixtureProviderHandle } from "./fixture-http-server.js";
export { startFixtureProviderStdio } from "./fixture-stdio-server.js";
export type { StartFixtureProviderStdioOptions, FixtureProviderStdioHandle } from "./fixture-stdio-server.js";
export {
  createFixtureMcpServer,
  FIXTURE_SERVER_INFO,
  IDEMPOTENCY_CONVENTION_META,
  fixtureIdempotencyAdvertisement,
} from "./fixture-mcp-server.js";
export { FixtureProviderService, openFixtureProviderService } from "./fixture-provider.service.js";
export type { FixtureProviderServiceOptions, ExitAfterCommitMode, FixtureTaskSupport } from "./fixture-provider.service.js";
export { FixtureTaskStore, MAX_FIXTURE_TASK_TTL_MS } from "./fixture-task-store.js";
export { IssueStore } from "./issue-store.repository.js";
export type { CommitOutcome, CommitCreateIssueInput, CommitCloseIssueInput } from "./issue-store.repository.js";
export { createControlRoutes } from "./control-routes.js";
export type { ControlErrorBody } from "./control-routes.js";
export { buildFixtureCli, parseFixtureCli } from "./cli-options.js";
export type { FixtureCliOptions } from "./cli-options.js";
export {
  CREATE_ISSUE_TOOL,
  GET_OPERATION_TOOL,
  PROVIDER_OPERATION_ID_META,
  COMMITTED_AT_META,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  CreateIssueArgsSchema,
  CreatedIssueSchema,
  CreateIssueToolResultSchema,
  FIXTURE_TOOL_ERROR_CODES,
  buildCreateIssueResult,
} from "./create-issue.contract.js";
export type { CreateIssueArgs, CreatedIssue, CreateIssueToolResult, FixtureToolErrorCode } from "./create-issue.contract.js";
export {
  CLOSE_ISSUE_TOOL,
  CloseIssueArgsSchema,
  ClosedIssueSchema,
  CloseIssueToolResultSchema,
  buildCloseIssueResult,
} from "./close-issue.contract.js";
export type { CloseIssueArgs, ClosedIssue, CloseIssueToolResult } from "./close-issue.contract.js";
export {
  GetOperationArgsSchema,
  GetOperationFoundSchema,
  GetOperationNotFoundSchema,
  GetOperationAnswerSchema,
} from "./get-operation.contract.js";
export type { GetOperationArgs, GetOperationFound, GetOperationNotFound, GetOperationAnswer } from "./get-operation.contract.js";
export {
  FixtureFaultsSchema,
  FixtureFaultsPatchSchema,
  DEFAULT_FIXTURE_FAULTS,
  MAX_DELAY_BEFORE_COMMIT_MS,
} from "./fixture-faults.contract.js";
export type { FixtureFaults, FixtureFaultsPatch } from "./fixture-faults.contract.js";
export { FixtureStatsSchema } from "./fixture-stats.contract.js";
export type { FixtureStats } from "./fixture-stats.contract.js";
