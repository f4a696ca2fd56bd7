import { defineProject } from "vitest/config";

export default defineProject({ test: { name: "fixture-adapter", include: ["tests/**/*.test.ts"], testTimeout: 30_000 } });
