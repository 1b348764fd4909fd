/** The `mercato` command line: dev, start, worker, migrate, check. */
import { parseArgs } from 'node:util';
import { ConfigError } from '../app/validate.ts';
import { RouteLoadError } from '../routes/loader.ts';
import { MERCATO_VERSION } from '../version.ts';
import { CliError } from './load-config.ts';
import { runCheck } from './check.ts';
import { runMigrate } from './migrate.ts';
import { runServe } from './serve.ts';

export const HELP = `mercato ${MERCATO_VERSION} — multi-tenant runtime for platform apps

Usage: mercato <command> [options]

Commands:
  dev        HTTP server + worker + cron scheduler in one process, embedded database, admin preview (development)
  start      HTTP server + cron scheduler (production; run workers separately)
  worker     Claim and execute queued runs (--concurrency=N)
  migrate    Apply database migrations and exit
  check      Validate service.config.ts and print what it defines (non-zero exit on problems)

Options:
  --config <path>     Config file (default: ./service.config.ts)
  --port <n>          HTTP port (default: PORT or 3000; 0 = any free port)
  --concurrency <n>   Worker: maximum active runs (default: worker.concurrency from the config, else 5)
  -h, --help          Show this help
  -v, --version       Show the version

Environment: see docs/environment.md (DATABASE_URL, PORT, PLATFORM_API_KEY, PLATFORM_API_SECRET, HOST,
PLATFORM_APP_URL, PLATFORM_ORIGIN, ENCRYPTION_KEY, NODE_ENV, LOG_LEVEL, ...).
`;

export interface CliIo {
  out: (line: string) => void;
  err: (line: string) => void;
  cwd: string;
  env: NodeJS.ProcessEnv;
}

const defaultIo = (): CliIo => ({
  out: (l) => process.stdout.write(`${l}\n`),
  err: (l) => process.stderr.write(`${l}\n`),
  cwd: process.cwd(),
  env: process.env,
});

export async function main(argv: string[], io: CliIo = defaultIo()): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    io.err(`mercato: ${(error as Error).message}\n\n${HELP}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.version) {
    io.out(MERCATO_VERSION);
    return 0;
  }
  const command = positionals[0];
  if (values.help || !command) {
    io.out(HELP);
    return command || values.help ? 0 : 2;
  }
  try {
    switch (command) {
      case 'dev':
      case 'start':
      case 'worker':
        return await runServe(command, values, io);
      case 'migrate':
        return await runMigrate(values, io);
      case 'check':
        return await runCheck(values, io);
      default:
        io.err(`mercato: unknown command "${command}"\n\n${HELP}`);
        return 2;
    }
  } catch (error) {
    if (error instanceof ConfigError || error instanceof CliError || error instanceof RouteLoadError) {
      io.err(`mercato ${command}: ${error.message}`);
      return error instanceof CliError ? error.exitCode : 1;
    }
    io.err(`mercato ${command}: unexpected error: ${(error as Error)?.stack ?? String(error)}`);
    return 1;
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      config: { type: 'string' },
      port: { type: 'string' },
      concurrency: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'v' },
    },
  });
}

export type CliValues = ReturnType<typeof parse>['values'];

/** A TCP port: 0 (any free port) to 65535. */
export function parsePort(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) > 65535) throw new CliError(`--port must be a port number from 0 to 65535 (got "${raw}")`, 2);
  return Number(raw);
}

export function parsePositiveInt(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new CliError(`--${name} must be a positive integer (got "${raw}")`, 2);
  return Number(raw);
}
