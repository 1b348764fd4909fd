/** Finds and imports the app's `service.config.ts` (or `--config`), whose default export is the configured instance. */
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type MercatoInstance, isMercatoInstance } from '../app/app.ts';

export const CONFIG_FILE_NAMES = ['service.config.ts', 'service.config.mts', 'service.config.js', 'service.config.mjs'];

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export function findConfigFile(cwd: string, explicit?: string): string {
  if (explicit) {
    const path = resolve(cwd, explicit);
    if (!existsSync(path)) throw new CliError(`Config file not found: ${path}`);
    return path;
  }
  for (const name of CONFIG_FILE_NAMES) {
    const path = resolve(cwd, name);
    if (existsSync(path)) return path;
  }
  throw new CliError(`No ${CONFIG_FILE_NAMES[0]} found in ${cwd} (looked for ${CONFIG_FILE_NAMES.join(', ')}); pass --config <path>`);
}

export interface LoadedConfig {
  instance: MercatoInstance<any, any>;
  configPath: string;
  projectDir: string;
}

export async function loadConfig(cwd: string, explicit?: string): Promise<LoadedConfig> {
  const configPath = findConfigFile(cwd, explicit);
  const mod = await import(pathToFileURL(configPath).href);
  const instance = mod.default;
  if (!isMercatoInstance(instance)) {
    throw new CliError(`${configPath} must export the configured instance as default: export default defineApp({...}).defineConfig({...})`);
  }
  return { instance, configPath, projectDir: dirname(configPath) };
}
