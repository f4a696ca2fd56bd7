/**
 * The README's copy-paste blocks run as a new user would run them: every fenced block whose info string is
 * `bash run` is extracted from README.md and run with bash from the repository root, in its own process
 * group, on free ports and in a temporary folder (`MOSOO_PORT`, `TRACKER_PORT`, `FIRST_USE`, which the block
 * reads with defaults). The block waits on conditions (health answers, log lines), never on timers; the test
 * bounds it only against a hang. The README's last runnable block stops what the first started, and the test checks
 * that nothing listens on the two ports afterwards; whatever a failed or hung run left is killed, with every
 * process the block started.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import treeKill from "tree-kill";
import { afterAll, describe, expect, it } from "vitest";

const REPO_ROOT = resolve(import.meta.dirname, "../../..");

/** The fenced blocks of `markdown` whose info string is exactly `bash run`, in order. */
function runnableBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```bash run\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

/** A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it). */
async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => done(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/**
 * Whether nothing accepts a connection on 127.0.0.1:`port`: polls every 200 ms while something still does, up to
 * `withinMs` (ms; a shutting-down server closes its socket a moment after its parent npm process exits).
 */
async function portClosed(port: number, withinMs = 30_000): Promise<boolean> {
  const refuses = () =>
    new Promise<boolean>((done) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        done(false);
      });
      socket.once("error", () => done(true));
    });
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (await refuses()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 200));
  }
}

const blocks = runnableBlocks(readFileSync(join(REPO_ROOT, "README.md"), "utf8"));
const dir = mkdtempSync(join(tmpdir(), "mosoo-readme-"));
/** The bash processes that ran the blocks: the ones still running at the end are killed, with all they started. */
const shells: ChildProcess[] = [];

afterAll(async () => {
  for (const shell of shells) {
    // a shell that exited has nothing left to kill (its jobs ended with its stop block or its EXIT trap), and its
    // pid may belong to another process by now
    if (shell.pid === undefined || shell.exitCode !== null || shell.signalCode !== null) continue;
    // the block's jobs run in process groups of their own (its `set -m`), so a hung block's are found as the
    // descendants of its bash, while bash still runs; then whatever is left of bash's own group
    await new Promise<void>((done) => treeKill(shell.pid!, "SIGKILL", () => done()));
    try {
      process.kill(-shell.pid, "SIGKILL");
    } catch {
      // the group already ended
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

describe("the README's copy-paste blocks", () => {
  it("has at least one block marked to run (the first real use)", () => {
    expect(blocks.length).toBeGreaterThan(0);
  });

  it("the first real use runs as written: a tool call through the API, a Driver and the fixture provider ends completed", async () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      MOSOO_PORT: String(await freePort()),
      TRACKER_PORT: String(await freePort()),
      FIRST_USE: dir,
    };
    // the test's own variables must not leak into the user's block (a new user's shell has none of them)
    for (const name of Object.keys(env)) if (name.startsWith("MOSOO_") && name !== "MOSOO_PORT") delete env[name];
    // a failure before the README's own stop block must not leave the jobs running (each is a process group of its
    // own under the block's `set -m`, out of reach of the group kill in afterAll); after that block there are none
    const script = `trap 'kill -KILL %1 %2 %3 2>/dev/null || true' EXIT\n${blocks.join("\n")}`;
    const child = spawn("bash", ["-e", "-o", "pipefail", "-c", script], { cwd: REPO_ROOT, env, detached: true });
    shells.push(child);
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (out += chunk.toString()));
    const code = await new Promise<number | null>((done) => child.on("exit", (c) => done(c)));
    const logs = ["api.log", "tracker.log", "driver.log"].map((f) => {
      try {
        return `--- ${f}\n${readFileSync(join(dir, f), "utf8").slice(-2000)}`;
      } catch {
        return `--- ${f}: none`;
      }
    });
    expect(code, `${out}\n${logs.join("\n")}`).toBe(0);
    expect(out).toContain('"commandStatus":"completed"');
    expect(out).toContain('"effectStatus":"succeeded"');
    // the operator CLI's list (the block's last command) shows the same effect, settled, on a row of its table
    const effectId = /"effectId":"([0-9A-Z]{26})","effectStatus":"succeeded"/.exec(out)?.[1];
    const cliRow = out.split("\n").find((line) => effectId !== undefined && line.includes(effectId) && !line.includes('"'));
    expect(cliRow, out).toMatch(/succeeded.*tracker.*createIssue.*tc-1/);
    // the README's stop block ended the three processes whole: nothing listens on the API's or the tracker's port
    // (npm and pnpm end before the node process they started, so the ports are polled until refused)
    for (const port of [env.MOSOO_PORT, env.TRACKER_PORT]) expect(await portClosed(Number(port)), `port ${port}`).toBe(true);
  }, 300_000);
});
