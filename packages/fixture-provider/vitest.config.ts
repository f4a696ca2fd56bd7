import { defineProject } from "vitest/config";

export default defineProject({ test: { name: "fixture-provider", include: ["tests/**/*.test.ts"] } });
