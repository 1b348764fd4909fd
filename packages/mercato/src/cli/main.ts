/**
 * The `mercato` command line (commander): init, dev, start, worker, migrate, check, prune. Every command has its own
 * `--help` with an example; an unknown command or option is a usage error (exit 2) that suggests the nearest one.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { MAX_PREFETCH } from '../app/validate/flows.ts';
import { parseDuration } from '../app/duration.ts';
import type { Duration } from '../app/types.ts';
import { MERCATO_VERSION } from '../version.ts';
import { CliError } from './load-config.ts';
import { type CliIo, type CliValues, reportError } from './io.ts';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

const defaultIo = (): CliIo => ({
  out: (l) => process.stdout.write(`${l}\n`),
  err: (l) => process.stderr.write(`${l}\n`),
  cwd: process.cwd(),
  env: process.env,
  isTTY: Boolean(process.stdout.isTTY),
});

/** A TCP port: 0 (any free port) to 65535. */
export function parsePort(raw: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) > 65535) throw new InvalidArgumentError(`must be a port number from 0 to 65535 (got "${raw}")`);
  return Number(raw);
}

export function parsePositiveInt(raw: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new InvalidArgumentError(`must be a positive integer (got "${raw}")`);
  return Number(raw);
}

/** `--prefetch`: an integer from 0 (off) to MAX_PREFETCH, like `worker.prefetch`. */
export function parsePrefetch(raw: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) > MAX_PREFETCH)
    throw new InvalidArgumentError(`must be an integer from 0 (off) to ${MAX_PREFETCH} (got "${raw}")`);
  return Number(raw);
}

/** `--older-than`: a Duration (`90d`, `12h`, `30m`, ms) above zero. */
export function parseRetentionDuration(raw: string): number {
  let ms: number;
  try {
    ms = parseDuration((/^\d+$/.test(raw) ? Number(raw) : raw) as Duration);
  } catch {
    throw new InvalidArgumentError(`must be a duration like 90d, 12h or 30m (got "${raw}")`);
  }
  if (ms <= 0) throw new InvalidArgumentError(`must be longer than zero (got "${raw}")`);
  return ms;
}

export const PRUNE_KINDS = ['runs', 'mcpAudit', 'webhookDeliveries', 'cronTicks'] as const;

/** `--only`: a comma-separated list of PRUNE_KINDS. */
export function parseKinds(raw: string): string[] {
  const kinds = raw
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  const unknown = kinds.filter((k) => !(PRUNE_KINDS as readonly string[]).includes(k));
  if (kinds.length === 0 || unknown.length > 0)
    throw new InvalidArgumentError(`must list one or more of ${PRUNE_KINDS.join(', ')} (got "${raw}")`);
  return [...new Set(kinds)];
}

const configOption = () => new Option('-c, --config <path>', 'the config file (default: ./service.config.ts, .mts, .js or .mjs)');
const portOption = () => new Option('-p, --port <n>', 'HTTP port (default: PORT or 3000; 0 = any free port)').argParser(parsePort);
const logLevelOption = () => new Option('--log-level <level>', 'log level (default: LOG_LEVEL or info)').choices(LOG_LEVELS);

/** Builds the command tree. `run` receives the command name and its options; it resolves to the exit code. */
export function buildProgram(io: CliIo, run: (command: string, values: CliValues, args: string[]) => Promise<number>): Command {
  const program = new Command('mercato');
  let exitCode = 0;
  program
    .description('Multi-tenant runtime for commerce platform apps: durable flows, crons, webhooks, providers, MCP and an admin UI.')
    .version(MERCATO_VERSION, '-v, --version', 'print the version')
    .helpOption('-h, --help', 'show help for a command')
    .showHelpAfterError('(run with --help for usage)')
    .showSuggestionAfterError(true)
    .configureOutput({ writeOut: (s) => io.out(s.replace(/\n$/, '')), writeErr: (s) => io.err(s.replace(/\n$/, '')) })
    .exitOverride()
    .addHelpText(
      'after',
      '\nDocs: in the docs/ folder of the Mercato repository (cli.md, getting-started.md, environment.md; not shipped in this package).\nExample:\n  $ npx mercato init my-app && cd my-app && npm install && npm run dev',
    );
  const action = (name: string) =>
    async function (this: Command, ...args: unknown[]) {
      exitCode = await run(
        name,
        this.opts<CliValues>(),
        args.filter((a): a is string => typeof a === 'string'),
      );
    };

  program
    .command('init')
    .description('create a new Mercato app in <dir> (refuses a non-empty directory unless --force)')
    .argument('<dir>', 'the directory to create (use . for the current one)')
    .option('-f, --force', 'write into a non-empty directory (files of the template are replaced, others kept)')
    .option('--mercato <spec>', 'the version spec of the mercato dependency in package.json (default: ^' + MERCATO_VERSION + ')')
    .addHelpText('after', '\nExample:\n  $ npx mercato init my-app\n  $ cd my-app && npm install && npm run dev')
    .action(action('init'));

  program
    .command('dev')
    .description(
      'development: HTTP server, worker and cron scheduler in one process, embedded database, platform simulator, admin preview; reloads on change',
    )
    .addOption(configOption())
    .addOption(portOption())
    .addOption(
      new Option(
        '--sim-port <n>',
        'port of the platform simulator (default: MERCATO_SIM_PORT or 3001; any free port when --port is 0)',
      ).argParser(parsePort),
    )
    .option('-q, --quiet', 'do not print a line per run, retry, webhook, cron tick and MCP call')
    .option('--no-watch', 'do not reload when the config or a file of the app changes')
    .addOption(logLevelOption())
    .addHelpText('after', '\nExamples:\n  $ npx mercato dev\n  $ npx mercato dev --port 4000 --sim-port 4001 --quiet')
    .action(action('dev'));

  program
    .command('start')
    .description('production: HTTP server and cron scheduler (run workers with `mercato worker`); JSON log lines')
    .addOption(configOption())
    .addOption(portOption())
    .addOption(logLevelOption())
    .addHelpText('after', '\nExample:\n  $ DATABASE_URL=postgres://… ENCRYPTION_KEY=… NODE_ENV=production npx mercato start --port 8080')
    .action(action('start'));

  program
    .command('worker')
    .description('claim and execute queued runs; run as many as you like; JSON log lines')
    .addOption(configOption())
    .addOption(
      new Option('--concurrency <n>', 'maximum active runs (default: worker.concurrency from the config, else 5)').argParser(
        parsePositiveInt,
      ),
    )
    .addOption(
      new Option(
        '--prefetch <n>',
        `most runs claimed ahead of the free slots when there is a backlog, 0 to ${MAX_PREFETCH}; 0 turns it off (default: worker.prefetch from the config, else 100)`,
      ).argParser(parsePrefetch),
    )
    .addOption(
      new Option(
        '--metrics-port <n>',
        'serve /healthz, /readyz and /metrics (with MERCATO_METRICS_TOKEN) on this port (default: MERCATO_METRICS_PORT, else none)',
      ).argParser(parsePort),
    )
    .addOption(logLevelOption())
    .addHelpText('after', '\nExample:\n  $ DATABASE_URL=postgres://… npx mercato worker --concurrency 20')
    .action(action('worker'));

  program
    .command('migrate')
    .description('apply database migrations and exit (start-up applies them too)')
    .addOption(configOption())
    .addHelpText('after', '\nExample:\n  $ DATABASE_URL=postgres://… npx mercato migrate')
    .action(action('migrate'));

  program
    .command('check')
    .description('validate the config, the environment and routes/, and print what the app defines (exit 1 listing every problem)')
    .addOption(configOption())
    .addHelpText('after', '\nExample:\n  $ npx mercato check')
    .action(action('check'));

  program
    .command('prune')
    .description('delete finished runs (with their steps and logs), MCP audit records, webhook and cron records past retention, now')
    .addOption(configOption())
    .option('--dry-run', 'print how many records would go and the cutoffs; delete nothing')
    .addOption(
      new Option('--older-than <duration>', 'one period for every table of this pass instead of the config (e.g. 90d, 12h)').argParser(
        parseRetentionDuration,
      ),
    )
    .addOption(
      new Option('--only <kinds>', 'comma-separated: runs, mcpAudit, webhookDeliveries, cronTicks (default: all)').argParser(parseKinds),
    )
    .option('--json', 'print the report as one JSON object')
    .addHelpText(
      'after',
      '\nExit codes: 0 done, 1 error, 2 usage, 3 another pass holds the lock. Docs: docs/retention.md.\nExamples:\n  $ DATABASE_URL=postgres://… npx mercato prune --dry-run\n  $ npx mercato prune --only runs --older-than 7d',
    )
    .action(action('prune'));

  // every subcommand reports its errors like the program does (suggestions, usage hint, exit 2)
  for (const command of program.commands) {
    command
      .showHelpAfterError(`(run mercato ${command.name()} --help for usage)`)
      .showSuggestionAfterError(true)
      .configureOutput({ writeOut: (s) => io.out(s.replace(/\n$/, '')), writeErr: (s) => io.err(s.replace(/\n$/, '')) })
      .exitOverride();
  }
  Object.defineProperty(program, 'exitCodeOfAction', { get: () => exitCode });
  return program;
}

export async function main(argv: string[], io: CliIo = defaultIo()): Promise<number> {
  let command = '';
  const program = buildProgram(io, async (name, values, args) => {
    command = name;
    return runCommand(name, values, args, io);
  });
  if (argv.length === 0) {
    io.err(program.helpInformation().replace(/\n$/, ''));
    return 2;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return (program as unknown as { exitCodeOfAction: number }).exitCodeOfAction;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') return 0;
      return 2;
    }
    return reportError(command, error, io);
  }
}

/**
 * The package build's embedded database template (scripts/build.mjs, db/pglite-template.ts): made in `templateDir`
 * (initdb and every migration) unless the one there already has this code's key. True when it made one.
 */
export async function buildPgliteTemplate(templateDir: string): Promise<boolean> {
  const [{ buildTemplate }, { openDatabase }, { migrate }] = await Promise.all([
    import('../db/pglite-template.ts'),
    import('../db/engine.ts'),
    import('../db/migrate.ts'),
  ]);
  return buildTemplate(templateDir, async (dataDir) => {
    const db = await openDatabase({ dataDir, template: false });
    try {
      await migrate(db);
    } finally {
      await db.close();
    }
  });
}

async function runCommand(name: string, values: CliValues, args: string[], io: CliIo): Promise<number> {
  switch (name) {
    case 'init': {
      const { runInit } = await import('./init.ts');
      return runInit({ dir: args[0]!, cwd: io.cwd, force: values.force, mercatoSpec: values.mercato, out: io.out, err: io.err });
    }
    case 'dev':
    case 'start':
    case 'worker': {
      const { runServe } = await import('./serve.ts');
      return runServe(name, values, io);
    }
    case 'migrate': {
      const { runMigrate } = await import('./migrate.ts');
      return runMigrate(values, io);
    }
    case 'check': {
      const { runCheck } = await import('./check.ts');
      return runCheck(values, io);
    }
    case 'prune': {
      const { runPrune } = await import('./prune.ts');
      return runPrune(values, io);
    }
    default:
      throw new CliError(`unknown command "${name}"`, 2);
  }
}
