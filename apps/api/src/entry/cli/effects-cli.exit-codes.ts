// The `mosoo-effects` CLI's exit codes: one rule, decided by the error code of the line it prints.

/**
 * Exit codes of `mosoo-effects`. 0: done. 2 (`badInput`): nothing ran, because the command line, its
 * environment or the store it names is wrong (a usage error, or a code of {@link BAD_INPUT_CODES}).
 * 1 (`refused`): the command ran and was refused, or it failed (every other code: the service's refusals,
 * `auth.invalid_token`, `api.unreachable`, `store.busy`, `internal`).
 */
export const EXIT = { ok: 0, refused: 1, badInput: 2 } as const;

/**
 * The codes after which `mosoo-effects` exits 2: what the user typed or configured is wrong and nothing was
 * done. `request.invalid`: a usage error, or an argument the service's schema refused; `config.invalid`: a
 * variable, file or flag is unusable (`--db` a directory, `--database-url` unreachable); `auth.missing_token`:
 * no operator token, over the API or for an action with `--db`; `store.not_found`: no file at `--db`;
 * `store.not_mosoo`: the file or database at `--db` / `--database-url` is no Mosoo store.
 */
export const BAD_INPUT_CODES: ReadonlySet<string> = new Set([
  "request.invalid",
  "config.invalid",
  "auth.missing_token",
  "store.not_found",
  "store.not_mosoo",
]);

/** The exit code of a failure with error code `code`: {@link EXIT}.badInput (2) for {@link BAD_INPUT_CODES}, else {@link EXIT}.refused (1). Pure. */
function exitCodeOf(code: string): typeof EXIT.badInput | typeof EXIT.refused {
  return BAD_INPUT_CODES.has(code) ? EXIT.badInput : EXIT.refused;
}

/**
 * A CLI failure: its stable error `code`, the exit code that code gets ({@link exitCodeOf}), and, as its
 * `message`, the line printed to stderr after `mosoo-effects: ` (`<code>: <message>`).
 */
export class CliFailure extends Error {
  readonly exitCode: typeof EXIT.badInput | typeof EXIT.refused;

  constructor(
    readonly code: string,
    message: string,
  ) {
    super(`${code}: ${message}`);
    this.exitCode = exitCodeOf(code);
  }
}
