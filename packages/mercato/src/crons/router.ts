/** /api/crons: the configured crons with the shop's enabled state, and the per-shop toggle. */
import { Hono } from 'hono';
import { readJsonBody } from '../http/body.ts';
import { InvalidInputError } from '../errors.ts';
import type { ApiEnv, ApiRouteGroup } from '../http/types.ts';
import { type CronsDeps, listCrons, setCronEnabled } from './service.ts';

/** `{ key: string, enabled: boolean }` and nothing else; a 400 names the offending field. */
export function parseToggleBody(body: unknown): { key: string; enabled: boolean } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidInputError('Body must be a JSON object: { "key": "<flow>:<schedule>", "enabled": true }');
  const { key, enabled, ...rest } = body as Record<string, unknown>;
  const extra = Object.keys(rest)[0];
  if (extra !== undefined) throw new InvalidInputError(`${extra}: unknown field (expected key, enabled)`, { field: extra });
  if (typeof key !== 'string' || key === '') throw new InvalidInputError('key: must be a non-empty string (the cron key "<flow>:<schedule>")', { field: 'key' });
  if (typeof enabled !== 'boolean') throw new InvalidInputError('enabled: must be a boolean', { field: 'enabled' });
  return { key, enabled };
}

export function cronsApi(deps: CronsDeps): ApiRouteGroup[] {
  const app = new Hono<ApiEnv>();
  app.get('/', async (c) => {
    const t = c.get('tenant');
    return c.json({ crons: await listCrons(deps, { appHandle: t.appHandle, shop: t.shop }) });
  });
  app.post('/toggle', async (c) => {
    const t = c.get('tenant');
    const { key, enabled } = parseToggleBody(await readJsonBody(c));
    return c.json(await setCronEnabled(deps, { appHandle: t.appHandle, shop: t.shop }, key, enabled));
  });
  return [{ prefix: '/api/crons', page: 'crons', app }];
}
