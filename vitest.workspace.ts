/**
 * The single list of vitest test projects. vitest 4 does not read this file by itself
 * (it only reads `test.projects`), so the root `vitest.config.ts` imports it and passes it as `test.projects`.
 */
export const testProjects: string[] = [
  "packages/contracts",
  "packages/effect-reconciliation",
  "packages/fixture-provider",
  "packages/operator-console",
  "packages/fixture-adapter",
  "packages/telemetry",
  "apps/api",
  "apps/driver",
  "packages/e2e",
  "packages/test-postgres",
];
