/**
 * Platform (the `shopify` option) resolution: single-app mode from the environment, multi-app mode from
 * `shopify.apps`. Resolved once at start-up; the rules are listed in docs/environment.md.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { readAliased } from './env.ts';
import type { PlatformAppConfig, PlatformConfig } from './types.ts';
import { ConfigError } from './validate.ts';

export interface ResolvedApp {
  /** `default` in single-app mode; the key of `shopify.apps` in multi-app mode. */
  handle: string;
  apiKey: string;
  apiSecret: string;
  appUrl: string | null;
}

export interface ResolvedPlatform {
  mode: 'single' | 'multi';
  apps: ResolvedApp[];
  scopes: string | null;
  apiVersion: string;
  byApiKey(apiKey: string): ResolvedApp | undefined;
  byHandle(handle: string): ResolvedApp | undefined;
}

/** The latest stable Admin API version we know; used when none is configured. */
export const LATEST_STABLE_API_VERSION = '2026-10';

/** The handle of the only app in single-app mode. */
export const SINGLE_APP_HANDLE = 'default';

/** Handles of `shopify.apps`: letters, numbers, `_` and `-`. */
export const APP_HANDLE_PATTERN = /^[A-Za-z0-9_-]+$/;

/**
 * File names searched for scopes in single-app mode: the platform CLI's `shopify.app.toml`, `shopify.app.staging.toml`,
 * ... first, then Mercato's own `platform.app*.toml`.
 */
const APP_TOML_PATTERNS = [/^shopify\.app.*\.toml$/, /^platform\.app.*\.toml$/];

/**
 * The names of one value each (docs/environment.md): Mercato's own and the platform CLI's (`shopify app dev` sets
 * SHOPIFY_API_KEY, SHOPIFY_API_SECRET, SCOPES, SHOPIFY_APP_URL / HOST). The first set one is used; several set must agree.
 */
export const PLATFORM_VARIABLES = {
  apiKey: ['PLATFORM_API_KEY', 'SHOPIFY_API_KEY'],
  apiSecret: ['PLATFORM_API_SECRET', 'SHOPIFY_API_SECRET'],
  appUrl: ['HOST', 'SHOPIFY_APP_URL', 'PLATFORM_APP_URL'],
  scopes: ['SCOPES'],
} as const;

interface AppToml {
  /** Project-relative path, as shown in messages. */
  path: string;
  clientId?: string;
  applicationUrl?: string;
  scopes: string | null;
}

/** Normalise a scope string: comma-separated, surrounding whitespace and empty entries removed, order kept. */
export function normaliseScopes(scopes: string): string {
  return scopes
    .split(',')
    .map((scope) => scope.trim())
    .filter((scope) => scope !== '')
    .join(',');
}

/** An absolute http(s) URL without a trailing slash, or a problem. */
function checkUrl(value: string, where: string, problems: string[]): string | null {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    problems.push(`${where}: ${JSON.stringify(value)} is not an absolute http(s) URL`);
    return null;
  }
  return value.replace(/\/+$/, '');
}

/** HOST, SHOPIFY_APP_URL or PLATFORM_APP_URL (those set must agree); null when none is set. */
function appUrlFromEnv(env: NodeJS.ProcessEnv, problems: string[]): string | null {
  const found = readAliased(env, PLATFORM_VARIABLES.appUrl, problems, (url) => url.replace(/\/+$/, ''));
  return found === undefined ? null : checkUrl(found.value, found.name, problems);
}

/** Scopes as a set, for comparing two sources (`read_orders,write_orders` equals `write_orders, read_orders`). */
const scopeSet = (scopes: string) => [...new Set(normaliseScopes(scopes).split(','))].sort().join(',');

/**
 * The scopes of the config and of SCOPES (the platform CLI sets it from the app's TOML): `shopify.scopes` first, then
 * SCOPES; both set and naming different scopes is a problem. Undefined when neither is set.
 */
function configuredScopes(shopify: PlatformConfig, env: NodeJS.ProcessEnv, problems: string[]): string | undefined {
  const fromConfig = globalScopes(shopify, problems);
  const fromEnv = readAliased(env, PLATFORM_VARIABLES.scopes, problems);
  const envScopes = fromEnv === undefined ? undefined : normaliseScopes(fromEnv.value);
  if (fromEnv !== undefined && envScopes === '') problems.push(`${fromEnv.name}: must name at least one scope, for example "read_orders"`);
  if (fromConfig !== undefined && envScopes && scopeSet(fromConfig) !== scopeSet(envScopes))
    problems.push(
      `shopify.scopes and ${fromEnv!.name} disagree: ${JSON.stringify(fromConfig)} in the config, ${JSON.stringify(envScopes)} in the environment; ` +
        'set one of them, or make them name the same scopes',
    );
  return fromConfig ?? (envScopes || undefined);
}

function displayPath(projectDir: string, file: string): string {
  const rel = relative(projectDir, file);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : file;
}

/** Read an app TOML file; problems name the path. Returns null when the file is missing or unreadable. */
function readAppToml(projectDir: string, file: string, where: string, problems: string[]): AppToml | null {
  const absolute = resolve(projectDir, file);
  const path = displayPath(projectDir, absolute);
  if (!existsSync(absolute)) {
    problems.push(`${where}: TOML file "${path}" not found (looked for ${absolute})`);
    return null;
  }
  let data: Record<string, unknown>;
  try {
    data = parseToml(readFileSync(absolute, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    problems.push(`${where}: TOML file "${path}" could not be parsed: ${reason}`);
    return null;
  }
  const result: AppToml = { path, scopes: null };
  let ok = true;
  const stringField = (value: unknown, key: string): string | undefined => {
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || value.trim() === '') {
      problems.push(`${where}: "${key}" in "${path}" must be a non-empty string`);
      ok = false;
      return undefined;
    }
    return value.trim();
  };
  result.clientId = stringField(data.client_id, 'client_id');
  result.applicationUrl = stringField(data.application_url, 'application_url');
  const accessScopes = data.access_scopes;
  if (accessScopes !== undefined) {
    if (typeof accessScopes !== 'object' || accessScopes === null || Array.isArray(accessScopes)) {
      problems.push(`${where}: "access_scopes" in "${path}" must be a table`);
      ok = false;
    } else {
      const scopes = (accessScopes as Record<string, unknown>).scopes;
      if (scopes !== undefined) {
        if (typeof scopes !== 'string') {
          problems.push(`${where}: "access_scopes.scopes" in "${path}" must be a string`);
          ok = false;
        } else {
          result.scopes = normaliseScopes(scopes);
        }
      }
    }
  }
  return ok ? result : null;
}

/**
 * The app TOML files of the project directory that single-app mode reads: `shopify.app.toml` (else the first
 * `shopify.app*.toml` by name) and the first `platform.app*.toml` by name; either may be missing. The first of the two
 * found is the one used.
 */
export function findAppTomls(projectDir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(projectDir);
  } catch {
    return [];
  }
  // shopify.app.toml is the CLI's default file (the others are `--config <name>` variants): it comes first of its kind
  const cli = names.includes(CLI_DEFAULT_TOML) ? CLI_DEFAULT_TOML : undefined;
  return APP_TOML_PATTERNS.map((pattern, i) => (i === 0 && cli) || names.filter((name) => pattern.test(name)).sort()[0]).filter(
    (n) => n !== undefined,
  );
}

const CLI_DEFAULT_TOML = 'shopify.app.toml';

/** `shopify.scopes` when given: a non-empty string. */
function globalScopes(shopify: PlatformConfig, problems: string[]): string | undefined {
  if (shopify.scopes === undefined) return undefined;
  const scopes = typeof shopify.scopes === 'string' ? normaliseScopes(shopify.scopes) : '';
  if (scopes === '') {
    problems.push('shopify.scopes: must be a non-empty scope string, for example "read_products,write_products"');
    return undefined;
  }
  return scopes;
}

function resolveSingle(
  shopify: PlatformConfig,
  env: NodeJS.ProcessEnv,
  projectDir: string,
  problems: string[],
): Omit<ResolvedPlatform, 'apiVersion' | 'byApiKey' | 'byHandle'> {
  const apiKey = readAliased(env, PLATFORM_VARIABLES.apiKey, problems)?.value;
  const apiSecret = readAliased(env, PLATFORM_VARIABLES.apiSecret, problems)?.value;
  if (apiKey === undefined)
    problems.push(
      "PLATFORM_API_KEY: required in single-app mode (`shopify.apps` is not configured); set it (or SHOPIFY_API_KEY) to the app's client ID",
    );
  if (apiSecret === undefined)
    problems.push(
      "PLATFORM_API_SECRET: required in single-app mode (`shopify.apps` is not configured); set it (or SHOPIFY_API_SECRET) to the app's client secret",
    );
  const appUrl = appUrlFromEnv(env, problems);
  let scopes = configuredScopes(shopify, env, problems) ?? null;
  if (scopes === null && shopify.scopes === undefined) {
    const files = findAppTomls(projectDir).map((file) => readAppToml(projectDir, file, 'shopify.scopes', problems));
    const [used, other] = files;
    scopes = used?.scopes ?? null;
    const setOf = (toml: AppToml) => (toml.scopes === null ? null : scopeSet(toml.scopes));
    if (used && other && setOf(used) !== setOf(other))
      problems.push(
        `shopify.scopes: not set, and "${used.path}" (${JSON.stringify(used.scopes)}) and "${other.path}" (${JSON.stringify(other.scopes)}) ` +
          'disagree on [access_scopes] scopes; make them agree, remove one, or set `shopify.scopes`',
      );
  }
  return {
    mode: 'single',
    apps: [{ handle: SINGLE_APP_HANDLE, apiKey: apiKey ?? '', apiSecret: apiSecret ?? '', appUrl }],
    scopes,
  };
}

function resolveApp(
  handle: string,
  app: PlatformAppConfig,
  env: NodeJS.ProcessEnv,
  projectDir: string,
  problems: string[],
): { app: ResolvedApp; toml: AppToml | null } {
  const where = `shopify.apps.${handle}`;
  if (!APP_HANDLE_PATTERN.test(handle))
    problems.push(`${where}: the handle ${JSON.stringify(handle)} may contain only letters, numbers, "_" and "-"`);
  if (typeof app !== 'object' || app === null) {
    problems.push(`${where}: must be an object with \`apiSecret\` and either \`toml\` or \`apiKey\``);
    return { app: { handle, apiKey: '', apiSecret: '', appUrl: null }, toml: null };
  }
  const nonEmpty = (value: unknown, field: string): string | undefined => {
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || value.trim() === '') {
      problems.push(`${where}.${field}: must be a non-empty string`);
      return undefined;
    }
    return value.trim();
  };
  const tomlPath = nonEmpty(app.toml, 'toml');
  const explicitKey = nonEmpty(app.apiKey, 'apiKey');
  const apiSecret = nonEmpty(app.apiSecret, 'apiSecret');
  if (app.apiSecret === undefined) problems.push(`${where}.apiSecret: required`);
  if (app.toml !== undefined && app.apiKey !== undefined)
    problems.push(`${where}: \`toml\` and \`apiKey\` are mutually exclusive; give one of them`);
  if (app.toml === undefined && app.apiKey === undefined)
    problems.push(`${where}: needs toml (a project-relative TOML path) or apiKey (the client ID); neither is set`);

  let toml: AppToml | null = null;
  let apiKey = explicitKey;
  if (tomlPath !== undefined && app.apiKey === undefined) {
    toml = readAppToml(projectDir, tomlPath, `${where}.toml`, problems);
    if (toml && toml.clientId === undefined) problems.push(`${where}.toml: "${toml.path}" has no client_id`);
    apiKey = toml?.clientId;
  }

  let appUrl: string | null;
  const override = nonEmpty(app.appUrl, 'appUrl');
  if (override !== undefined) appUrl = checkUrl(override, `${where}.appUrl`, problems);
  else if (toml?.applicationUrl !== undefined)
    appUrl = checkUrl(toml.applicationUrl, `${where}.toml: application_url in "${toml.path}"`, problems);
  else appUrl = appUrlFromEnv(env, problems);

  return { app: { handle, apiKey: apiKey ?? '', apiSecret: apiSecret ?? '', appUrl }, toml };
}

function resolveMulti(
  shopify: PlatformConfig,
  env: NodeJS.ProcessEnv,
  projectDir: string,
  problems: string[],
): Omit<ResolvedPlatform, 'apiVersion' | 'byApiKey' | 'byHandle'> {
  const entries = typeof shopify.apps === 'object' && shopify.apps !== null ? Object.entries(shopify.apps) : [];
  if (entries.length === 0) problems.push('shopify.apps: configure at least one app, or omit `apps` for single-app mode');
  const apps: ResolvedApp[] = [];
  const tomls: AppToml[] = [];
  // A bad HOST / PLATFORM_APP_URL is reported once, not once per app that falls back to it.
  const appProblems: string[] = [];
  for (const [handle, config] of entries) {
    const resolved = resolveApp(handle, config, env, projectDir, appProblems);
    apps.push(resolved.app);
    if (resolved.toml) tomls.push(resolved.toml);
  }
  for (const problem of appProblems) if (!problems.includes(problem)) problems.push(problem);

  const byKey = new Map<string, string>();
  for (const app of apps) {
    if (app.apiKey === '') continue;
    const first = byKey.get(app.apiKey);
    if (first !== undefined)
      problems.push(`shopify.apps.${app.handle}: has the same API key (client ID) as shopify.apps.${first}; each app needs its own`);
    else byKey.set(app.apiKey, app.handle);
  }

  let scopes = configuredScopes(shopify, env, problems) ?? null;
  if (scopes === null && shopify.scopes === undefined && tomls.length > 0) {
    const distinct = new Set(tomls.map((toml) => toml.scopes));
    if (distinct.size > 1) {
      const listed = tomls
        .map((toml) => `"${toml.path}" (${toml.scopes === null ? 'no access_scopes.scopes' : JSON.stringify(toml.scopes)})`)
        .join(', ');
      problems.push(
        `shopify.scopes: not set, and the app TOML files disagree on scopes: ${listed}; per-app scopes are not supported, set one global \`shopify.scopes\` or make the files agree`,
      );
    } else {
      scopes = tomls[0].scopes;
    }
  }
  return { mode: 'multi', apps, scopes };
}

/**
 * Resolve the `shopify` option against the environment and the project's TOML files, once at start-up.
 * Throws ConfigError listing every problem.
 */
export function resolvePlatform(shopify: PlatformConfig, env: NodeJS.ProcessEnv, projectDir: string): ResolvedPlatform {
  const config: PlatformConfig = shopify ?? {};
  const problems: string[] = [];
  const resolved =
    config.apps === undefined ? resolveSingle(config, env, projectDir, problems) : resolveMulti(config, env, projectDir, problems);
  let apiVersion = LATEST_STABLE_API_VERSION;
  if (config.apiVersion !== undefined) {
    if (typeof config.apiVersion !== 'string' || !/^(\d{4}-\d{2}|unstable)$/.test(config.apiVersion)) {
      problems.push(`shopify.apiVersion: ${JSON.stringify(config.apiVersion)} is not an API version (YYYY-MM or "unstable")`);
    } else {
      apiVersion = config.apiVersion;
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);

  const apps = resolved.apps.map((app) => Object.freeze({ ...app }));
  const byApiKey = new Map(apps.map((app) => [app.apiKey, app]));
  const byHandle = new Map(apps.map((app) => [app.handle, app]));
  return Object.freeze({
    mode: resolved.mode,
    apps: Object.freeze(apps) as ResolvedApp[],
    scopes: resolved.scopes,
    apiVersion,
    byApiKey: (apiKey: string) => byApiKey.get(apiKey),
    byHandle: (handle: string) => byHandle.get(handle),
  });
}
