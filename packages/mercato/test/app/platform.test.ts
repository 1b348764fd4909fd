import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LATEST_STABLE_API_VERSION, resolvePlatform } from '../../src/app/platform.ts';
import { ConfigError } from '../../src/app/validate.ts';
import { thrown } from '../kit/index.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A temporary project folder holding `files` (path → content). */
function project(files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'mercato-platform-'));
  dirs.push(dir);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

function appToml(fields: { clientId?: string; url?: string; scopes?: string }): string {
  const lines: string[] = [];
  if (fields.clientId !== undefined) lines.push(`client_id = "${fields.clientId}"`);
  if (fields.url !== undefined) lines.push(`application_url = "${fields.url}"`);
  lines.push('name = "Test app"', 'embedded = true');
  if (fields.scopes !== undefined) lines.push('', '[access_scopes]', `scopes = "${fields.scopes}"`);
  return `${lines.join('\n')}\n`;
}

/** The problems of the ConfigError `fn` throws. */
const problemsOf = (fn: () => unknown): string[] => thrown(fn, ConfigError).problems;

const CREDENTIALS = { PLATFORM_API_KEY: 'key-1', PLATFORM_API_SECRET: 'secret-1' };

describe('single-app mode', () => {
  it('takes the credentials from the environment, under the handle "default"', () => {
    const platform = resolvePlatform({}, CREDENTIALS, project());
    expect(platform.mode).toBe('single');
    expect(platform.apps).toEqual([{ handle: 'default', apiKey: 'key-1', apiSecret: 'secret-1', appUrl: null }]);
    expect(platform.scopes).toBeNull();
    expect(platform.apiVersion).toBe(LATEST_STABLE_API_VERSION);
    expect(platform.byApiKey('key-1')?.handle).toBe('default');
    expect(platform.byHandle('default')?.apiKey).toBe('key-1');
    expect(platform.byApiKey('other')).toBeUndefined();
    expect(platform.byHandle('other')).toBeUndefined();
  });

  it('requires PLATFORM_API_KEY and PLATFORM_API_SECRET, naming each missing variable', () => {
    expect(problemsOf(() => resolvePlatform({}, {}, project()))).toEqual([
      expect.stringMatching(/^PLATFORM_API_KEY: required in single-app mode/),
      expect.stringMatching(/^PLATFORM_API_SECRET: required in single-app mode/),
    ]);
    expect(problemsOf(() => resolvePlatform({}, { PLATFORM_API_KEY: 'k' }, project()))).toEqual([
      expect.stringMatching(/^PLATFORM_API_SECRET:/),
    ]);
    expect(problemsOf(() => resolvePlatform({}, { PLATFORM_API_SECRET: 's' }, project()))).toEqual([
      expect.stringMatching(/^PLATFORM_API_KEY:/),
    ]);
  });

  it("accepts the platform CLI's SHOPIFY_API_KEY and SHOPIFY_API_SECRET beside PLATFORM_*; two that disagree name both, never the values", () => {
    const cli = { SHOPIFY_API_KEY: 'cli-key', SHOPIFY_API_SECRET: 'cli-secret' };
    expect(resolvePlatform({}, cli, project()).apps[0]).toMatchObject({ apiKey: 'cli-key', apiSecret: 'cli-secret' });
    expect(
      resolvePlatform({}, { ...cli, PLATFORM_API_KEY: 'cli-key', PLATFORM_API_SECRET: 'cli-secret' }, project()).apps[0],
    ).toMatchObject({
      apiKey: 'cli-key',
      apiSecret: 'cli-secret',
    });
    const problems = problemsOf(() =>
      resolvePlatform({}, { ...cli, PLATFORM_API_KEY: 'other-key', PLATFORM_API_SECRET: 'other-secret' }, project()),
    );
    expect(problems).toEqual([
      expect.stringMatching(/^PLATFORM_API_KEY and SHOPIFY_API_KEY are both set and disagree/),
      expect.stringMatching(/^PLATFORM_API_SECRET and SHOPIFY_API_SECRET are both set and disagree/),
    ]);
    expect(problems.join('\n')).not.toMatch(/cli-secret|other-secret|cli-key|other-key/);
  });

  it('takes scopes from SCOPES (the platform CLI sets it) when shopify.scopes is not set, before any TOML file', () => {
    const dir = project({ 'shopify.app.toml': appToml({ scopes: 'read_orders' }) });
    expect(resolvePlatform({}, { ...CREDENTIALS, SCOPES: 'write_products, read_products' }, dir).scopes).toBe(
      'write_products,read_products',
    );
    // the same scopes in another order agree
    expect(
      resolvePlatform({ scopes: 'read_products,write_products' }, { ...CREDENTIALS, SCOPES: 'write_products,read_products' }, dir).scopes,
    ).toBe('read_products,write_products');
    expect(problemsOf(() => resolvePlatform({ scopes: 'read_products' }, { ...CREDENTIALS, SCOPES: 'read_orders' }, dir))).toEqual([
      'shopify.scopes and SCOPES disagree: "read_products" in the config, "read_orders" in the environment; set one of them, or make them name the same scopes',
    ]);
    expect(problemsOf(() => resolvePlatform({}, { ...CREDENTIALS, SCOPES: ' , ' }, dir))).toEqual([
      expect.stringMatching(/^SCOPES: must name at least one scope/),
    ]);
  });

  it("reads scopes from the platform CLI's shopify.app*.toml before platform.app*.toml; the two disagreeing name both", () => {
    const cliFile = project({
      'shopify.app.toml': appToml({ scopes: 'read_orders' }),
      'shopify.app.staging.toml': appToml({ scopes: 'x' }),
    });
    // shopify.app.toml is the CLI's default file; a --config variant is read only without it
    expect(resolvePlatform({}, CREDENTIALS, cliFile).scopes).toBe('read_orders');
    const variant = project({
      'shopify.app.staging.toml': appToml({ scopes: 'read_staging' }),
      'shopify.app.z.toml': appToml({ scopes: 'z' }),
    });
    expect(resolvePlatform({}, CREDENTIALS, variant).scopes).toBe('read_staging');
    const both = project({
      'shopify.app.toml': appToml({ scopes: 'read_orders' }),
      'platform.app.toml': appToml({ scopes: 'read_orders' }),
    });
    expect(resolvePlatform({}, CREDENTIALS, both).scopes).toBe('read_orders');
    const disagree = project({
      'shopify.app.toml': appToml({ scopes: 'read_orders' }),
      'platform.app.toml': appToml({ scopes: 'read_products' }),
    });
    expect(problemsOf(() => resolvePlatform({}, CREDENTIALS, disagree))).toEqual([
      expect.stringMatching(
        /^shopify\.scopes: not set, and "shopify\.app\.toml" \("read_orders"\) and "platform\.app\.toml" \("read_products"\) disagree/,
      ),
    ]);
  });

  it('never echoes the secret', () => {
    const problems = problemsOf(() => resolvePlatform({}, { PLATFORM_API_SECRET: 'very-secret-value' }, project()));
    expect(problems.join('\n')).not.toContain('very-secret-value');
  });

  it('takes the app URL from HOST, SHOPIFY_APP_URL or PLATFORM_APP_URL; several set must agree', () => {
    const dir = project();
    expect(
      resolvePlatform({}, { ...CREDENTIALS, HOST: 'https://host.example/', PLATFORM_APP_URL: 'https://host.example' }, dir).apps[0].appUrl,
    ).toBe('https://host.example');
    expect(resolvePlatform({}, { ...CREDENTIALS, SHOPIFY_APP_URL: 'https://tunnel.example/' }, dir).apps[0].appUrl).toBe(
      'https://tunnel.example',
    );
    expect(
      problemsOf(() =>
        resolvePlatform({}, { ...CREDENTIALS, HOST: 'https://host.example', PLATFORM_APP_URL: 'https://app-url.example' }, dir),
      ),
    ).toEqual([expect.stringMatching(/^HOST and PLATFORM_APP_URL are both set and disagree/)]);
    expect(
      problemsOf(() =>
        resolvePlatform(
          {},
          { ...CREDENTIALS, SHOPIFY_APP_URL: 'https://tunnel.example', PLATFORM_APP_URL: 'https://app-url.example' },
          dir,
        ),
      ),
    ).toEqual([expect.stringMatching(/^SHOPIFY_APP_URL and PLATFORM_APP_URL are both set and disagree/)]);
    expect(resolvePlatform({}, { ...CREDENTIALS, PLATFORM_APP_URL: 'https://app-url.example' }, dir).apps[0].appUrl).toBe(
      'https://app-url.example',
    );
    expect(resolvePlatform({}, { ...CREDENTIALS, HOST: '', PLATFORM_APP_URL: 'https://app-url.example' }, dir).apps[0].appUrl).toBe(
      'https://app-url.example',
    );
  });

  it('rejects a HOST or PLATFORM_APP_URL that is not an http(s) URL', () => {
    expect(problemsOf(() => resolvePlatform({}, { ...CREDENTIALS, HOST: 'host.example' }, project()))).toEqual([
      expect.stringMatching(/^HOST: "host.example" is not an absolute http\(s\) URL/),
    ]);
    expect(problemsOf(() => resolvePlatform({}, { ...CREDENTIALS, PLATFORM_APP_URL: 'ftp://x' }, project()))).toEqual([
      expect.stringMatching(/^PLATFORM_APP_URL:/),
    ]);
  });

  it('prefers shopify.scopes over the TOML file', () => {
    const dir = project({ 'platform.app.toml': appToml({ scopes: 'read_orders' }) });
    expect(resolvePlatform({ scopes: 'read_products, write_products' }, CREDENTIALS, dir).scopes).toBe('read_products,write_products');
  });

  it('reads scopes from the first platform.app*.toml sorted by name', () => {
    const dir = project({
      'platform.app.staging.toml': appToml({ scopes: 'read_staging' }),
      'platform.app.production.toml': appToml({ scopes: 'read_production' }),
      'other.toml': appToml({ scopes: 'read_other' }),
      'app.platform.app.toml': appToml({ scopes: 'read_wrong' }),
    });
    expect(resolvePlatform({}, CREDENTIALS, dir).scopes).toBe('read_production');
    const plain = project({ 'platform.app.toml': appToml({ scopes: 'read_plain' }), 'platform.app.z.toml': appToml({ scopes: 'read_z' }) });
    expect(resolvePlatform({}, CREDENTIALS, plain).scopes).toBe('read_plain');
  });

  it('ignores TOML files in other folders and gives null scopes when no file matches', () => {
    const dir = project({ 'config/platform.app.toml': appToml({ scopes: 'read_nested' }) });
    expect(resolvePlatform({}, CREDENTIALS, dir).scopes).toBeNull();
  });

  it('gives null scopes when the first TOML file has no access_scopes', () => {
    const dir = project({ 'platform.app.toml': appToml({ clientId: 'x' }) });
    expect(resolvePlatform({}, CREDENTIALS, dir).scopes).toBeNull();
  });

  it('names an unparsable TOML file', () => {
    const dir = project({ 'platform.app.toml': 'client_id = "unterminated\n' });
    expect(problemsOf(() => resolvePlatform({}, CREDENTIALS, dir))).toEqual([
      expect.stringMatching(/^shopify\.scopes: TOML file "platform\.app\.toml" could not be parsed/),
    ]);
  });

  it('rejects non-string scopes in the TOML file', () => {
    const dir = project({ 'platform.app.toml': '[access_scopes]\nscopes = ["read_products"]\n' });
    expect(problemsOf(() => resolvePlatform({}, CREDENTIALS, dir))).toEqual([
      expect.stringContaining('"access_scopes.scopes" in "platform.app.toml" must be a string'),
    ]);
  });

  it('rejects an empty shopify.scopes', () => {
    expect(problemsOf(() => resolvePlatform({ scopes: ' , ' }, CREDENTIALS, project()))).toEqual([
      expect.stringMatching(/^shopify\.scopes: must be a non-empty scope string/),
    ]);
  });

  it('uses shopify.apiVersion when given and rejects a malformed one', () => {
    expect(resolvePlatform({ apiVersion: '2025-07' }, CREDENTIALS, project()).apiVersion).toBe('2025-07');
    expect(resolvePlatform({ apiVersion: 'unstable' }, CREDENTIALS, project()).apiVersion).toBe('unstable');
    expect(problemsOf(() => resolvePlatform({ apiVersion: 'latest' }, CREDENTIALS, project()))).toEqual([
      expect.stringMatching(/^shopify\.apiVersion:/),
    ]);
  });
});

describe('multi-app mode', () => {
  it('ignores PLATFORM_API_KEY / PLATFORM_API_SECRET and resolves each app', () => {
    const platform = resolvePlatform(
      { apps: { main: { apiKey: 'k-main', apiSecret: 's-main' }, b2b: { apiKey: 'k-b2b', apiSecret: 's-b2b' } } },
      CREDENTIALS,
      project(),
    );
    expect(platform.mode).toBe('multi');
    expect(platform.apps.map((app) => [app.handle, app.apiKey, app.apiSecret])).toEqual([
      ['main', 'k-main', 's-main'],
      ['b2b', 'k-b2b', 's-b2b'],
    ]);
    expect(platform.byApiKey('k-b2b')?.handle).toBe('b2b');
    expect(platform.byHandle('main')?.apiKey).toBe('k-main');
    expect(platform.byApiKey('key-1')).toBeUndefined();
    expect(platform.byHandle('default')).toBeUndefined();
  });

  it('reads client_id and application_url from the app TOML (project-relative)', () => {
    const dir = project({ 'apps/main.toml': appToml({ clientId: 'toml-key', url: 'https://main.example/', scopes: 'read_products' }) });
    const platform = resolvePlatform({ apps: { main: { toml: 'apps/main.toml', apiSecret: 's' } } }, { HOST: 'https://host.example' }, dir);
    expect(platform.apps[0]).toEqual({ handle: 'main', apiKey: 'toml-key', apiSecret: 's', appUrl: 'https://main.example' });
    expect(platform.scopes).toBe('read_products');
  });

  describe('appUrl resolution', () => {
    const env = { HOST: 'https://host.example' };
    const appUrlEnv = { PLATFORM_APP_URL: 'https://app-url.example' };

    it('with TOML: the override wins over application_url', () => {
      const dir = project({ 'a.toml': appToml({ clientId: 'k', url: 'https://toml.example' }) });
      expect(
        resolvePlatform({ apps: { a: { toml: 'a.toml', apiSecret: 's', appUrl: 'https://override.example' } } }, env, dir).apps[0].appUrl,
      ).toBe('https://override.example');
    });

    it('with TOML: application_url, then HOST, then PLATFORM_APP_URL, else null', () => {
      const withUrl = project({ 'a.toml': appToml({ clientId: 'k', url: 'https://toml.example' }) });
      const noUrl = project({ 'a.toml': appToml({ clientId: 'k' }) });
      const apps = { a: { toml: 'a.toml', apiSecret: 's' } };
      expect(resolvePlatform({ apps }, env, withUrl).apps[0].appUrl).toBe('https://toml.example');
      expect(resolvePlatform({ apps }, env, noUrl).apps[0].appUrl).toBe('https://host.example');
      expect(resolvePlatform({ apps }, appUrlEnv, noUrl).apps[0].appUrl).toBe('https://app-url.example');
      expect(resolvePlatform({ apps }, {}, noUrl).apps[0].appUrl).toBeNull();
    });

    it('without TOML: the override, then HOST, then PLATFORM_APP_URL, else null', () => {
      const dir = project();
      expect(
        resolvePlatform({ apps: { a: { apiKey: 'k', apiSecret: 's', appUrl: 'https://override.example' } } }, env, dir).apps[0].appUrl,
      ).toBe('https://override.example');
      const apps = { a: { apiKey: 'k', apiSecret: 's' } };
      expect(resolvePlatform({ apps }, env, dir).apps[0].appUrl).toBe('https://host.example');
      expect(resolvePlatform({ apps }, appUrlEnv, dir).apps[0].appUrl).toBe('https://app-url.example');
      expect(resolvePlatform({ apps }, {}, dir).apps[0].appUrl).toBeNull();
    });

    it('rejects an override or application_url that is not an http(s) URL', () => {
      const dir = project({ 'a.toml': appToml({ clientId: 'k', url: 'not a url' }) });
      expect(problemsOf(() => resolvePlatform({ apps: { a: { apiKey: 'k', apiSecret: 's', appUrl: 'nope' } } }, {}, dir))).toEqual([
        expect.stringMatching(/^shopify\.apps\.a\.appUrl: "nope" is not an absolute http\(s\) URL/),
      ]);
      expect(problemsOf(() => resolvePlatform({ apps: { a: { toml: 'a.toml', apiSecret: 's' } } }, {}, dir))).toEqual([
        expect.stringMatching(/^shopify\.apps\.a\.toml: application_url in "a\.toml"/),
      ]);
    });

    it('reports a bad HOST once even when several apps fall back to it', () => {
      const apps = { a: { apiKey: 'k1', apiSecret: 's' }, b: { apiKey: 'k2', apiSecret: 's' } };
      expect(problemsOf(() => resolvePlatform({ apps }, { HOST: 'bad' }, project()))).toEqual([expect.stringMatching(/^HOST:/)]);
    });
  });

  describe('scopes', () => {
    it('uses the global shopify.scopes, whatever the TOML files say', () => {
      const dir = project({
        'a.toml': appToml({ clientId: 'k1', scopes: 'read_a' }),
        'b.toml': appToml({ clientId: 'k2', scopes: 'read_b' }),
      });
      const apps = { a: { toml: 'a.toml', apiSecret: 's' }, b: { toml: 'b.toml', apiSecret: 's' } };
      expect(resolvePlatform({ scopes: 'read_products', apps }, {}, dir).scopes).toBe('read_products');
    });

    it('uses the scopes all TOML files agree on (whitespace aside)', () => {
      const dir = project({
        'a.toml': appToml({ clientId: 'k1', scopes: 'read_a,write_a' }),
        'b.toml': appToml({ clientId: 'k2', scopes: 'read_a, write_a' }),
      });
      const apps = { a: { toml: 'a.toml', apiSecret: 's' }, b: { toml: 'b.toml', apiSecret: 's' }, c: { apiKey: 'k3', apiSecret: 's' } };
      expect(resolvePlatform({ apps }, {}, dir).scopes).toBe('read_a,write_a');
    });

    it('rejects TOML files that disagree, naming the files', () => {
      const dir = project({
        'a.toml': appToml({ clientId: 'k1', scopes: 'read_a' }),
        'b.toml': appToml({ clientId: 'k2', scopes: 'read_b' }),
      });
      const problems = problemsOf(() =>
        resolvePlatform({ apps: { a: { toml: 'a.toml', apiSecret: 's' }, b: { toml: 'b.toml', apiSecret: 's' } } }, {}, dir),
      );
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^shopify\.scopes: not set, and the app TOML files disagree/);
      expect(problems[0]).toContain('"a.toml" ("read_a")');
      expect(problems[0]).toContain('"b.toml" ("read_b")');
    });

    it('treats a TOML file without scopes as disagreeing with one that has them', () => {
      const dir = project({ 'a.toml': appToml({ clientId: 'k1', scopes: 'read_a' }), 'b.toml': appToml({ clientId: 'k2' }) });
      const problems = problemsOf(() =>
        resolvePlatform({ apps: { a: { toml: 'a.toml', apiSecret: 's' }, b: { toml: 'b.toml', apiSecret: 's' } } }, {}, dir),
      );
      expect(problems[0]).toContain('"b.toml" (no access_scopes.scopes)');
    });

    it('is null without global scopes and without TOML files (platform.app*.toml is not used in multi-app mode)', () => {
      const dir = project({ 'platform.app.toml': appToml({ scopes: 'read_single' }) });
      expect(resolvePlatform({ apps: { a: { apiKey: 'k', apiSecret: 's' } } }, {}, dir).scopes).toBeNull();
    });
  });

  describe('errors', () => {
    it('requires apiSecret', () => {
      expect(problemsOf(() => resolvePlatform({ apps: { a: { apiKey: 'k' } as never } }, {}, project()))).toEqual([
        'shopify.apps.a.apiSecret: required',
      ]);
      expect(problemsOf(() => resolvePlatform({ apps: { a: { apiKey: 'k', apiSecret: '  ' } } }, {}, project()))).toEqual([
        'shopify.apps.a.apiSecret: must be a non-empty string',
      ]);
    });

    it('requires apiKey when toml is omitted', () => {
      expect(problemsOf(() => resolvePlatform({ apps: { a: { apiSecret: 's' } } }, {}, project()))).toEqual([
        'shopify.apps.a: needs toml (a project-relative TOML path) or apiKey (the client ID); neither is set',
      ]);
    });

    it('rejects toml and apiKey together', () => {
      const dir = project({ 'a.toml': appToml({ clientId: 'k' }) });
      expect(problemsOf(() => resolvePlatform({ apps: { a: { toml: 'a.toml', apiKey: 'k', apiSecret: 's' } } }, {}, dir))).toEqual([
        expect.stringMatching(/^shopify\.apps\.a: `toml` and `apiKey` are mutually exclusive/),
      ]);
    });

    it('rejects an empty apiKey or toml', () => {
      expect(problemsOf(() => resolvePlatform({ apps: { a: { apiKey: '', apiSecret: 's' } } }, {}, project()))).toEqual([
        'shopify.apps.a.apiKey: must be a non-empty string',
      ]);
      expect(problemsOf(() => resolvePlatform({ apps: { a: { toml: '', apiSecret: 's' } } }, {}, project()))).toEqual([
        'shopify.apps.a.toml: must be a non-empty string',
      ]);
    });

    it('names a missing TOML file', () => {
      const problems = problemsOf(() => resolvePlatform({ apps: { a: { toml: 'apps/missing.toml', apiSecret: 's' } } }, {}, project()));
      expect(problems).toEqual([expect.stringMatching(/^shopify\.apps\.a\.toml: TOML file "apps\/missing\.toml" not found/)]);
    });

    it('names an unparsable TOML file', () => {
      const dir = project({ 'broken.toml': '[access_scopes\nscopes = 1' });
      expect(problemsOf(() => resolvePlatform({ apps: { a: { toml: 'broken.toml', apiSecret: 's' } } }, {}, dir))).toEqual([
        expect.stringMatching(/^shopify\.apps\.a\.toml: TOML file "broken\.toml" could not be parsed/),
      ]);
    });

    it('requires client_id in the TOML file', () => {
      const dir = project({ 'a.toml': appToml({ url: 'https://a.example' }) });
      expect(problemsOf(() => resolvePlatform({ apps: { a: { toml: 'a.toml', apiSecret: 's' } } }, {}, dir))).toEqual([
        'shopify.apps.a.toml: "a.toml" has no client_id',
      ]);
    });

    it('rejects a non-string client_id', () => {
      const dir = project({ 'a.toml': 'client_id = 42\n' });
      expect(problemsOf(() => resolvePlatform({ apps: { a: { toml: 'a.toml', apiSecret: 's' } } }, {}, dir))).toEqual([
        'shopify.apps.a.toml: "client_id" in "a.toml" must be a non-empty string',
      ]);
    });

    it('rejects two apps with the same API key, also when one comes from TOML', () => {
      const dir = project({ 'b.toml': appToml({ clientId: 'same' }) });
      const problems = problemsOf(() =>
        resolvePlatform({ apps: { a: { apiKey: 'same', apiSecret: 's1' }, b: { toml: 'b.toml', apiSecret: 's2' } } }, {}, dir),
      );
      expect(problems).toEqual([expect.stringMatching(/^shopify\.apps\.b: has the same API key \(client ID\) as shopify\.apps\.a/)]);
    });

    it('rejects handles with other characters', () => {
      expect(problemsOf(() => resolvePlatform({ apps: { 'main app': { apiKey: 'k', apiSecret: 's' } } }, {}, project()))).toEqual([
        expect.stringMatching(/^shopify\.apps\.main app: the handle "main app" may contain only letters, numbers/),
      ]);
      expect(resolvePlatform({ apps: { 'Main_app-2': { apiKey: 'k', apiSecret: 's' } } }, {}, project()).apps[0].handle).toBe('Main_app-2');
    });

    it('rejects an empty apps map', () => {
      expect(problemsOf(() => resolvePlatform({ apps: {} }, {}, project()))).toEqual([
        expect.stringMatching(/^shopify\.apps: configure at least one app/),
      ]);
    });

    it('reports every problem together', () => {
      const problems = problemsOf(() =>
        resolvePlatform(
          { scopes: '', apps: { a: { apiSecret: 's' }, b: { toml: 'nope.toml', apiSecret: 's' }, c: { apiKey: 'k' } as never } },
          {},
          project(),
        ),
      );
      expect(problems).toHaveLength(4);
    });
  });
});
