import { defineProject } from "vitest/config";

export default defineProject({ test: { name: "operator-console", include: ["tests/**/*.test.ts"] } });
