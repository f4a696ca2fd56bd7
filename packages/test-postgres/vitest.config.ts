import { defineProject } from "vitest/config";

// testTimeout: a bound for a hung test, not a timing assertion; starting a PostgreSQL server takes seconds on a shared 2-core machine.

export default defineProject({ test: { name: "test-postgres", include: ["tests/**/*.test.ts"], testTimeout: 120_000 } });
