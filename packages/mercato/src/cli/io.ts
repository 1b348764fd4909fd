/**
 * What every command shares: its input and output (`CliIo`), the options it was given (`CliValues`), and the one place
 * a failure becomes text (`reportError`). Apart from cli/main.ts so that each command's module, imported lazily by
 * main.ts, does not import main.ts back.
 */
import { ConfigError } from '../app/validate.ts';
import { databaseUnavailableReason } from '../db/unavailable.ts';
import { EmbeddedDatabaseInUseError } from '../db/data-dir-lock.ts';
import { PortUnavailableError } from '../http/server.ts';
import { RouteLoadError } from '../routes/loader.ts';
import { CliError } from './load-config.ts';
import { UserCodeError } from './user-code.ts';

export interface CliIo {
  out: (line: string) => void;
  err: (line: string) => void;
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** True when `out` is a terminal (colours, clickable links). */
  isTTY?: boolean;
}

/** The options of every command (each command declares the ones it takes). */
export interface CliValues {
  config?: string;
  port?: number;
  simPort?: number;
  concurrency?: number;
  prefetch?: number;
  metricsPort?: number;
  quiet?: boolean;
  logLevel?: string;
  watch?: boolean;
  force?: boolean;
  mercato?: string;
  dryRun?: boolean;
  olderThan?: number;
  only?: string[];
  json?: boolean;
}

/** The one place a command's failure becomes text: known errors as their message, user-code errors with a code frame. */
export function reportError(command: string, error: unknown, io: CliIo): number {
  const prefix = command ? `mercato ${command}` : 'mercato';
  if (error instanceof UserCodeError) {
    io.err(`${prefix}: ${error.message}`);
    return 1;
  }
  if (
    error instanceof ConfigError ||
    error instanceof CliError ||
    error instanceof RouteLoadError ||
    error instanceof EmbeddedDatabaseInUseError ||
    error instanceof PortUnavailableError
  ) {
    io.err(`${prefix}: ${error.message}`);
    return error instanceof CliError ? error.exitCode : 1;
  }
  const database = databaseConnectionProblem(error);
  if (database) {
    io.err(`${prefix}: ${database}`);
    return 1;
  }
  io.err(`${prefix}: unexpected error: ${(error as Error)?.stack ?? String(error)}`);
  return 1;
}

/** SQLSTATEs of a server that answered but refused the connection: bad password, no such role, no such database. */
const REFUSED_CONNECTION_SQLSTATES: ReadonlySet<string> = new Set(['28P01', '28000', '3D000']);

/**
 * A database that cannot be reached or refuses the connection is the operator's to fix, not a bug: one line saying what
 * happened and what to check, no stack. The message is the driver's (it names host and port, never the password).
 */
export function databaseConnectionProblem(error: unknown): string | undefined {
  const message = error instanceof Error ? error.message : String(error);
  const unreachable = databaseUnavailableReason(error);
  if (unreachable !== undefined)
    return `cannot reach the database (${unreachable === message ? message : `${unreachable}: ${message}`}); check DATABASE_URL and that PostgreSQL is running and accepts connections`;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && REFUSED_CONNECTION_SQLSTATES.has(code))
    return `the database refused the connection (${code}: ${message}); check the user, password and database name in DATABASE_URL`;
  return undefined;
}
