/**
 * The output schemas of the built-in tools (`outputSchema` in tools/list). A tool that declares one answers with
 * `structuredContent` conforming to it (MCP 2025-11-25, "Output Schema"); clients such as the official SDK check that.
 * The schemas name every field a result always has (`required`) and leave room for fields added later (no
 * `additionalProperties: false`), so a newer server never breaks an older client's check.
 */
import type { JsonSchema } from '../../app/json-schema.ts';

const str = { type: 'string' };
const strOrNull = { type: ['string', 'null'] };
const int = { type: 'integer' };
const bool = { type: 'boolean' };
const obj = (properties: Record<string, unknown>, required: string[] = Object.keys(properties)): JsonSchema => ({
  type: 'object',
  properties,
  required,
});
const array = (items: JsonSchema) => ({ type: 'array', items });

const RUN_STATUS = { type: 'string', enum: ['pending', 'running', 'sleeping', 'completed', 'failed', 'canceled'] };

/** Why a pending or sleeping run waits (api/types.ts `RunWaiting`); null for a running or finished run. */
const RUN_WAITING = {
  type: ['object', 'null'],
  description: 'Why the run is not running now and when it expects to become due; null for a running or finished run.',
  properties: {
    reason: {
      type: 'string',
      enum: ['queued', 'claimed', 'debounced', 'rate_limited', 'concurrency', 'retry_backoff', 'sleeping'],
    },
    until: { type: ['string', 'null'], description: 'When the run expects to become due (ISO time); null when it is due now' },
    heldBy: { type: ['string', 'null'], description: 'concurrency: a run holding a slot of the key' },
    key: { type: ['string', 'null'], description: 'The shaping key the wait is about (rate_limited, concurrency, debounced)' },
    ahead: { type: ['integer', 'null'], description: 'queued: due runs of the same shop that go before it (at most 1,000 counted)' },
    message: { type: 'string', description: 'One sentence for people' },
  },
  required: ['reason', 'until', 'heldBy', 'key', 'ahead', 'message'],
};

const LOG_LINE = obj(
  {
    id: int,
    level: { type: 'string', enum: ['info', 'warn', 'error'] },
    message: str,
    step: strOrNull,
    attempt: int,
    context: { type: 'boolean', description: 'true for a line shown around a match, not a match itself' },
  },
  ['id', 'level', 'message', 'context'],
);

export const OUTPUT_SCHEMAS = {
  'service.shops.list': obj({
    shops: array(obj({ shop: str, current: bool })),
    crossShopAccess: bool,
  }),
  'service.admin.graphql': obj(
    {
      shop: str,
      apiVersion: str,
      status: { type: 'integer', description: 'HTTP status of the platform answer' },
      body: { description: 'The parsed platform answer (data and errors as sent)' },
    },
    ['shop', 'apiVersion', 'status'],
  ),
  'service.logs.search': obj(
    {
      runId: str,
      logs: array(LOG_LINE),
      total: { type: 'integer', description: 'Matching lines (counted up to a cap)' },
      totalExact: { type: 'boolean', description: 'false when total is the cap' },
    },
    ['runId', 'logs', 'total'],
  ),
  'service.flows.list': obj({
    flows: array(
      obj(
        {
          name: str,
          description: strOrNull,
          inputSchema: { type: 'object' },
          crons: array(obj({ key: str, schedule: str }, ['key', 'schedule'])),
          concurrency: { type: ['integer', 'null'] },
        },
        ['name', 'inputSchema', 'crons'],
      ),
    ),
  }),
  'service.flows.run': obj(
    {
      runId: str,
      status: { type: 'string', enum: ['pending'] },
      joined: { type: 'boolean', description: 'True when a debounced dispatch joined the run already waiting.' },
      flow: str,
      shop: str,
    },
    ['runId', 'status', 'flow', 'shop'],
  ),
  'service.crons.list': obj({
    crons: array(obj({ key: str, flow: str, schedule: str, enabled: bool }, ['key', 'flow', 'schedule', 'enabled'])),
  }),
  'service.crons.set_enabled': obj({ ok: bool, key: str, enabled: bool }),
  'service.runs.get': obj(
    {
      run: obj(
        {
          id: str,
          flowName: str,
          status: RUN_STATUS,
          attempt: int,
          trigger: str,
          input: {},
          output: {},
          error: { type: ['object', 'null'] },
          createdAt: str,
          startedAt: strOrNull,
          finishedAt: strOrNull,
          waiting: RUN_WAITING,
        },
        ['id', 'flowName', 'status', 'attempt', 'trigger', 'createdAt', 'startedAt', 'finishedAt', 'waiting'],
      ),
      steps: array(
        obj(
          {
            name: str,
            status: { type: 'string', enum: ['completed', 'failed', 'sleeping'] },
            attempt: int,
            error: { type: ['object', 'null'] },
            startedAt: str,
            finishedAt: strOrNull,
            durationMs: { type: ['integer', 'null'] },
          },
          ['name', 'status', 'attempt', 'startedAt'],
        ),
      ),
      logs: array(LOG_LINE),
      logTotal: { type: 'integer', description: 'Log lines of the run (counted up to a cap); `logs` holds the newest' },
    },
    ['run', 'steps', 'logs', 'logTotal'],
  ),
  'service.runs.cancel': obj({
    runId: str,
    status: { type: 'string', enum: ['canceled'] },
    previousStatus: str,
  }),
  'service.runs.retry': obj({
    runId: str,
    status: { type: 'string', enum: ['pending'] },
    mode: { type: 'string', enum: ['resume', 'reset'] },
    previousStatus: str,
    deletedSteps: { type: 'integer', description: 'Step results deleted (reset deletes all; resume only the failed ones)' },
  }),
} satisfies Record<string, JsonSchema>;
