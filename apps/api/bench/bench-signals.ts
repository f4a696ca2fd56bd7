// The signals that stop a bench run, and the exit code each one ends it with.
import { constants } from "node:os";

/** The signals that stop a run: Ctrl-C, a polite kill, and a closed terminal or dropped ssh session. */
export const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/** The shell's exit code of a process ended by `signal`: 128 + its number (SIGINT 130, SIGTERM 143, SIGHUP 129). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}
