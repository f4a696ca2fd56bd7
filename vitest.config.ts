import { defineConfig } from "vitest/config";
import { testProjects } from "./vitest.workspace.ts";
import { SlowestFirstSequencer } from "./vitest.sequencer.ts";

/**
 * Every project's files share one pool of workers, one per core the machine has (`maxWorkers: "100%"`):
 * vitest's own default in a run is one fewer than the cores, which on a 2-core machine runs the
 * whole suite in a single worker, one file after another. The pool takes the files longest first
 * (vitest.sequencer.ts), so the workers finish together.
 */
export default defineConfig({ test: { projects: testProjects, maxWorkers: "100%", sequence: { sequencer: SlowestFirstSequencer } } });
