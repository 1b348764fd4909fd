/** /api/crons: the configured crons with the shop's enabled state, and the per-shop toggle. */
import { Hono } from 'hono';
import { readJsonBody } from '../http/body.ts';
import { parseInput } from '../input.ts';
import type { ApiEnv, ApiRouteGroup } from '../http/types.ts';
import { TOGGLE_NOT_AN_OBJECT, toggleBody } from './schemas.ts';
import { type CronsDeps, listCrons, setCronEnabled } from './service.ts';

/** `{ key: string, enabled: boolean }` and nothing else; a 400 names the offending field. */
export function parseToggleBody(body: unknown): { key: string; enabled: boolean } {
  return parseInput(toggleBody, body, { notAnObject: TOGGLE_NOT_AN_OBJECT });
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
