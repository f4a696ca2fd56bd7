// A vitest reporter for `npm test` (scripts/test.mjs): one line a minute while the test files run, saying how many are
// done and which are running. vitest's default reporter prints a file only when it ends, and the longest files run
// first (vitest.sequencer.ts), so without it the first minutes of a run print nothing.
import { relative } from "node:path";

/** How often (ms) a progress line is printed. */
const EVERY_MS = 60_000;

/**
 * The progress reporter (vitest's reporter interface: `onTestRunStart`, `onTestModuleStart`, `onTestModuleEnd`,
 * `onTestRunEnd`). `print` receives each line (default: stdout); `root` shortens the files' paths. The lines do not
 * change what the run does or how its result is read (scripts/test.mjs reads vitest's JSON report).
 */
export default class TestProgressReporter {
  /** @param {{ print?: (line: string) => void, root?: string, everyMs?: number }} [opts] */
  constructor(opts = {}) {
    this.print = opts.print ?? ((line) => process.stdout.write(`${line}\n`));
    this.root = opts.root ?? process.cwd();
    this.everyMs = opts.everyMs ?? EVERY_MS;
    /** @type {Set<string>} */
    this.running = new Set();
    this.done = 0;
    this.total = 0;
    this.startedAt = Date.now();
    /** @type {NodeJS.Timeout | undefined} */
    this.timer = undefined;
  }

  /** @param {ReadonlyArray<unknown>} specifications the test files of this run */
  onTestRunStart(specifications) {
    this.total = specifications.length;
    this.startedAt = Date.now();
    this.timer = setInterval(() => this.print(this.line()), this.everyMs);
    this.timer.unref();
  }

  /** @param {{ moduleId: string }} testModule */
  onTestModuleStart(testModule) {
    this.running.add(testModule.moduleId);
  }

  /** @param {{ moduleId: string }} testModule */
  onTestModuleEnd(testModule) {
    if (this.running.delete(testModule.moduleId)) this.done += 1;
  }

  onTestRunEnd() {
    clearInterval(this.timer);
  }

  /** The progress line now: `[progress m:ss] <done> of <total> test files done; running: <files>`. */
  line() {
    const s = Math.floor((Date.now() - this.startedAt) / 1000);
    const clock = `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
    const files = [...this.running].map((f) => relative(this.root, f)).join(", ") || "none";
    return `[progress ${clock}] ${this.done} of ${this.total} test files done; running: ${files}`;
  }
}
