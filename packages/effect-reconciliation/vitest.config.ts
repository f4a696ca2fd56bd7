import { defineProject } from "vitest/config";

export default defineProject({ test: { name: "effect-reconciliation", include: ["tests/**/*.test.ts"] } });
