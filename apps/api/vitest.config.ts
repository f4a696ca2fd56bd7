import { defineProject } from "vitest/config";

// testTimeout: a bound for a hung test, not a timing assertion; tests that start processes or run
// many property runs take seconds on a shared 2-core machine (vitest's 5 s default failed there).
// globalSetup: one throwaway PostgreSQL server per run for the tests/pg-*.test.ts files (README "PostgreSQL (preview)").

export default defineProject({
  test: { name: "api", include: ["tests/**/*.test.ts"], testTimeout: 60_000, globalSetup: ["./tests/helpers/pg-global-setup.ts"] },
});
