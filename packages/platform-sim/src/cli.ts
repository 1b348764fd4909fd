/**
 * `platform-sim [--port N] [--host H] [--app KEY,SECRET[,APP_URL]]... [--shop DOMAIN]... [--bucket-max N] [--restore-rate N]`
 *
 * Defaults: port 4000 on 127.0.0.1; one app, Mercato's development app (`mercato-dev-api-key` / `mercato-dev-api-secret`,
 * webhooks to http://localhost:3000/webhooks); shops demo-1.myshopify.com and demo-2.myshopify.com; bucket 1000 points
 * restoring 50 per second.
 */
import { FUNCTION_API_TYPES, type FunctionApiType, type SimFunctionInput } from './functions/registry.ts';
import type { SimAppInput } from './state.ts';

export const DEV_APP: Readonly<Required<Omit<SimAppInput, 'scopes' | 'functions'>>> = Object.freeze({
  apiKey: 'mercato-dev-api-key',
  apiSecret: 'mercato-dev-api-secret',
  appUrl: 'http://localhost:3000',
});
export const DEV_SHOPS: readonly string[] = ['demo-1.myshopify.com', 'demo-2.myshopify.com'];
export const DEFAULT_PORT = 4000;

export interface CliOptions {
  port: number;
  hostname: string;
  apps: SimAppInput[];
  shops: string[];
  bucket: { max?: number; restoreRate?: number };
  /** Functions deployed for every app given (`--function HANDLE:API_TYPE`). */
  functions: SimFunctionInput[];
  help: boolean;
}

export const USAGE = `Usage: platform-sim [options]

A simulator of the commerce platform's API: token exchange, Admin GraphQL (shop, function instances) with cost throttling,
signed webhooks. Point Mercato at it with PLATFORM_ORIGIN=<its URL>.

Options:
  --port N                 port to listen on (default ${DEFAULT_PORT}; 0 picks a free one)
  --host H                 interface to bind (default 127.0.0.1)
  --app KEY,SECRET[,URL]   an app: API key, API secret, app URL for webhooks (repeatable;
                           default ${DEV_APP.apiKey},${DEV_APP.apiSecret},${DEV_APP.appUrl})
  --shop DOMAIN            a shop (repeatable; default ${DEV_SHOPS.join(', ')})
  --function HANDLE:TYPE   a deployed function of the apps (repeatable), TYPE one of
                           ${FUNCTION_API_TYPES.slice(0, 6).join(', ')},
                           ${FUNCTION_API_TYPES.slice(6).join(', ')}
  --bucket-max N           cost bucket size per (app, shop) (default 1000)
  --restore-rate N         points restored per second (default 50)
  -h, --help               this help

Control API (not the platform's): GET /__sim/state, POST /__sim/webhooks {shop, topic, payload},
POST /__sim/webhooks/<id>/redeliver, POST /__sim/uninstall {shop}, GET|POST /__sim/functions {handle, apiType}.`;

function positive(name: string, raw: string | undefined, allowZero = false): number {
  const n = Number(raw);
  if (raw === undefined || raw === '' || !Number.isFinite(n) || n < 0 || (!allowZero && n === 0))
    throw new Error(`${name} must be a ${allowZero ? 'non-negative' : 'positive'} number`);
  return n;
}

export function parseArgs(argv: readonly string[]): CliOptions {
  const options: CliOptions = { port: DEFAULT_PORT, hostname: '127.0.0.1', apps: [], shops: [], bucket: {}, functions: [], help: false };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.includes('=') ? (argv[i]!.split(/=(.*)/s, 2) as [string, string]) : [argv[i]!, undefined];
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case '-h':
      case '--help':
        options.help = true;
        break;
      case '--port': {
        const port = positive('--port', value(), true);
        if (!Number.isInteger(port) || port > 65535) throw new Error('--port must be an integer from 0 to 65535');
        options.port = port;
        break;
      }
      case '--host':
        options.hostname = value() ?? '';
        if (!options.hostname) throw new Error('--host needs a value');
        break;
      case '--app': {
        const parts = (value() ?? '').split(',');
        if (parts.length < 2 || !parts[0] || !parts[1]) throw new Error('--app must be KEY,SECRET[,APP_URL]');
        options.apps.push({ apiKey: parts[0], apiSecret: parts[1], appUrl: parts.slice(2).join(',') || null });
        break;
      }
      case '--shop':
        options.shops.push(value() ?? '');
        break;
      case '--function': {
        const [handle, apiType] = (value() ?? '').split(':');
        if (!handle || !apiType || !(FUNCTION_API_TYPES as readonly string[]).includes(apiType))
          throw new Error(`--function must be HANDLE:API_TYPE with API_TYPE one of ${FUNCTION_API_TYPES.join(', ')}`);
        options.functions.push({ handle, apiType: apiType as FunctionApiType });
        break;
      }
      case '--bucket-max':
        options.bucket.max = positive('--bucket-max', value());
        break;
      case '--restore-rate':
        options.bucket.restoreRate = positive('--restore-rate', value());
        break;
      default:
        throw new Error(`unknown option "${flag}"`);
    }
  }
  if (options.apps.length === 0) options.apps.push({ ...DEV_APP });
  if (options.shops.length === 0) options.shops.push(...DEV_SHOPS);
  for (const app of options.apps) app.functions = [...options.functions];
  return options;
}

/** Runs the CLI until SIGINT/SIGTERM. Returns the exit code. */
export async function main(
  argv: readonly string[],
  out: (line: string) => void = console.log,
  err: (line: string) => void = console.error,
): Promise<number> {
  let options: CliOptions;
  try {
    options = parseArgs(argv);
  } catch (error) {
    err(`platform-sim: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (options.help) {
    out(USAGE);
    return 0;
  }
  const { start } = await import('./server.ts');
  let sim;
  try {
    sim = await start({ port: options.port, hostname: options.hostname, apps: options.apps, shops: options.shops, bucket: options.bucket });
  } catch (error) {
    err(`platform-sim: ${(error as Error).message}`);
    return 1;
  }
  out(
    [
      `platform-sim listening on ${sim.url}`,
      `  apps:   ${[...sim.state.apps.values()].map((a) => `${a.apiKey}${a.appUrl ? ` → ${a.appUrl}/webhooks` : ''}`).join(', ')}`,
      `  shops:  ${[...sim.state.shops.keys()].join(', ')}`,
      `  bucket: ${sim.state.bucketConfig.max} points, ${sim.state.bucketConfig.restoreRate}/s`,
      ...(options.functions.length > 0 ? [`  functions: ${options.functions.map((f) => `${f.handle} (${f.apiType})`).join(', ')}`] : []),
      `  use:    PLATFORM_ORIGIN=${sim.url}`,
    ].join('\n'),
  );
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await sim.close();
  return 0;
}
