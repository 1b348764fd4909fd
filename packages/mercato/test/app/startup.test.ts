/** Start-up (createRuntime, as `mercato dev`/`start`/`worker` run it): environment and platform problems are reported together. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { resolveStartup } from '../../src/app/startup.ts';
import { ConfigError } from '../../src/app/validate.ts';
import { createRuntime } from '../../src/runtime.ts';

const app = defineApp();
const instance = app.defineConfig({ flows: { a: app.defineFlow({ name: 'a', input: z.object({}), run: () => 1 }) } });
const projectDir = () => mkdtempSync(join(tmpdir(), 'mercato-startup-'));

describe('start-up configuration problems', () => {
  it('createRuntime reports environment and platform problems in one ConfigError, before opening a database', async () => {
    const dir = projectDir();
    const error = await createRuntime({
      instance,
      projectDir: dir,
      mode: 'start',
      env: { NODE_ENV: 'production', PORT: 'eighty', PLATFORM_API_SECRET: 's' },
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'PORT: "eighty" is not a port number (an integer from 0 to 65535)',
      expect.stringMatching(/^ENCRYPTION_KEY is required in production/),
      expect.stringMatching(/^PLATFORM_API_KEY: required in single-app mode/),
    ]);
  });

  it('resolveStartup returns the environment and the platform when both are valid', () => {
    const { env, platform } = resolveStartup(
      undefined,
      { PLATFORM_API_KEY: 'k', PLATFORM_API_SECRET: 's', PORT: '4000' },
      { projectDir: projectDir(), mode: 'check' },
    );
    expect(env.port).toBe(4000);
    expect(platform.apps.map((a) => a.apiKey)).toEqual(['k']);
  });
});
