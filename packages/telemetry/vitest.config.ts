import { defineProject } from "vitest/config";

export default defineProject({ test: { name: "telemetry", include: ["tests/**/*.test.ts"], testTimeout: 30_000 } });
