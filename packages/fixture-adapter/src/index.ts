/** `@mosoo/fixture-adapter`: the fixture issue tracker's reconciliation adapter, installable by package. @module */
export {
  FIXTURE_MAX_IN_FLIGHT_MS,
  fixtureIssueTrackerAdapterFactory,
  fixtureIssueTrackerMaxInFlightAdapterFactory,
  FixtureIssueTrackerOptionsSchema,
} from "./fixture-issue-tracker.adapter.js";
export type { FixtureIssueTrackerOptions } from "./fixture-issue-tracker.adapter.js";
