// Commander's usage-error messages without the values typed on the command line (the CLIs print them; a value may be a secret).

/** How commander (14.x) starts its unknown-option message: `error: unknown option '<the whole argument>'`. */
const UNKNOWN_OPTION = "error: unknown option '";

/**
 * Commander's unknown-option message names the whole argument, value included (`--tokne=SECRET`,
 * `-xSECRET`): keeps only the option's name (`--tokne`, `-x`) and commander's suggestion of a known
 * flag (`(Did you mean --token?)`), so a secret typed with a misspelt flag is never printed. Any
 * other message is returned as it is.
 */
function withoutOptionValue(text: string): string {
  if (!text.startsWith(UNKNOWN_OPTION)) return text;
  const argument = text.slice(UNKNOWN_OPTION.length);
  const name = /^--[^=\s']*|^-[^\s']?/.exec(argument)?.[0] ?? "";
  const suggestion = /\n\(Did you mean (--[A-Za-z0-9-]+)\?\)\s*$/.exec(argument);
  return `${UNKNOWN_OPTION}${name}'${suggestion ? ` (Did you mean ${suggestion[1]}?)` : ""}`;
}

/**
 * A word that may be a misspelt command name and cannot be a secret this project accepts: 1-15 characters,
 * lower-case letters, `-` and `:` only, starting with a letter. Every token and key the programs take is at
 * least 16 characters, and a password usually holds a digit or a capital; a command name (`list`,
 * `compensate`, `store:check`) holds neither.
 */
const COMMAND_LIKE = /^[a-z][a-z:-]{0,14}$/;

/** How commander (14.x) starts its unknown-command message: `error: unknown command '<the word>'`, then maybe `\n(Did you mean <a command>?)`. */
const UNKNOWN_COMMAND = "error: unknown command '";

/**
 * Commander's unknown-command message with the word named when it is {@link COMMAND_LIKE} (a typo: `lsit`), else
 * without it. The word is everything up to the message's LAST quote (a word may hold quotes and newlines itself); the
 * suggestion after it names a known command and is kept. Any other message is returned as it is.
 */
function withoutUnknownCommand(text: string): string {
  if (!text.startsWith(UNKNOWN_COMMAND)) return text;
  const rest = text.slice(UNKNOWN_COMMAND.length);
  const end = rest.lastIndexOf("'");
  const word = end < 0 ? rest : rest.slice(0, end);
  const after = end < 0 ? "" : rest.slice(end + 1);
  const tail = /^\n\(Did you mean [a-z][a-z:-]*\?\)\s*$/.test(after) ? after : "";
  return (COMMAND_LIKE.test(word) ? `error: unknown command '${word}'` : "error: unknown command") + tail;
}

/**
 * Commander's invalid-argument messages quote the value given (`option '--api-url <url>' argument
 * 'https://user:password@…' is invalid.`, `… value '…' from env 'MOSOO_API_URL' is invalid.`,
 * `command-argument value '…' is invalid for argument 'id'.`, `unknown command '…'`):
 * drops the quoted value and keeps the option or argument's name and the parser's reason, so a
 * credential typed into a malformed value is never printed; an unknown command is named only when it
 * looks like a misspelt command name ({@link COMMAND_LIKE}). Any other message is returned as it is.
 */
function withoutInvalidValue(text: string): string {
  return text
    .replace(/ argument '[\s\S]*' is invalid/, " argument is invalid")
    .replace(/ value '[\s\S]*' from env '([^']*)' is invalid/, " value from env '$1' is invalid")
    .replace(/command-argument value '[\s\S]*' is invalid for/, "command-argument value is invalid for");
}

/**
 * A commander (14.x) usage error without any value the user typed: an unknown option is named
 * without its value (`--tokne=SECRET` → `--tokne`, keeping commander's "Did you mean" suggestion),
 * an invalid option or argument is named with the parser's reason but not the value, and an unknown
 * command is named only when it looks like a misspelt command name (`lsit`; at most 15 lower-case
 * letters, `-`, `:`), never a word that could be a secret pasted in its place. Used by every
 * CLI of the project (`mosoo-effects`, `mosoo-driver`) before it prints the line. Any other message is
 * returned as it is.
 */
export function usageErrorWithoutValues(text: string): string {
  return withoutUnknownCommand(withoutInvalidValue(withoutOptionValue(text)));
}
