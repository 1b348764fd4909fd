/**
 * The run tools: read one run of the token's shop (with its steps and newest log lines), cancel it, retry it. They use
 * the same lifecycle as the admin API (flows/lifecycle.ts), always for the token's shop: another shop's run is "not found".
 */
import { isUuid } from '../../db/sql.ts';
import { cancelRun, retryRun } from '../../flows/lifecycle.ts';
import { runDetail } from '../../flows/list.ts';
import type { ToolSpec } from '../catalog.ts';
import type { McpDeps } from '../deps.ts';
import { RPC, RpcError } from '../rpc.ts';
import { OUTPUT_SCHEMAS } from './output-schemas.ts';

export const RUN_LOG_LINES_DEFAULT = 20;
export const RUN_LOG_LINES_MAX = 200;

const RUN_ID = { type: 'string', description: 'The run id (from service.flows.run, service://runs/recent or the admin).' };
const notARun = (id: unknown) => new RpcError(RPC.INVALID_PARAMS, `runId: "${String(id).slice(0, 100)}" is not a run id (a UUID)`);

export function runTools(deps: McpDeps): ToolSpec[] {
  return [
    {
      name: 'service.runs.get',
      title: 'Get a run',
      description:
        "Reads one run of the token's shop: status, trigger, attempt, input, output, error, why it waits (`waiting`: reason, until, " +
        'key, heldBy, ahead, message; null unless pending or sleeping), its steps, and its newest log lines (newest first; use ' +
        'service.logs.search to search them).',
      requiredPermissions: ['read_runs'],
      riskLevel: 'medium',
      inputSchema: {
        type: 'object',
        properties: {
          runId: RUN_ID,
          logLines: {
            type: 'integer',
            minimum: 0,
            maximum: RUN_LOG_LINES_MAX,
            description: `How many of the newest log lines to include. Default ${RUN_LOG_LINES_DEFAULT}.`,
          },
        },
        required: ['runId'],
        additionalProperties: false,
      },
      outputSchema: OUTPUT_SCHEMAS['service.runs.get'],
      annotations: { readOnlyHint: true, openWorldHint: false },
      builtIn: true,
      async run(ctx, input) {
        if (!isUuid(input.runId)) throw notARun(input.runId);
        const tenant = { appHandle: ctx.appHandle, shop: ctx.shop };
        const detail = await runDetail(deps.db, tenant, input.runId);
        if (!detail) throw new RpcError(RPC.INVALID_PARAMS, `runId: run ${input.runId} not found for shop ${ctx.shop}`);
        const { steps, ...run } = detail;
        const limit = (input.logLines as number | undefined) ?? RUN_LOG_LINES_DEFAULT;
        let logs: unknown[] = [];
        let logTotal = 0;
        if (limit > 0 && deps.logs) {
          const found = await deps.logs.search(tenant, input.runId, {
            query: '',
            levels: ['info', 'warn', 'error'],
            context: false,
            limit,
            signal: ctx.signal,
          });
          logs = found?.logs ?? [];
          logTotal = found?.total ?? 0;
        }
        return { run, steps, logs, logTotal };
      },
    },
    {
      name: 'service.runs.cancel',
      title: 'Cancel a run',
      description:
        "Cancels a pending, running or sleeping run of the token's shop; a running execution is interrupted. A run that has already " +
        'finished cannot be canceled (-32000 with its status).',
      requiredPermissions: ['cancel_runs'],
      riskLevel: 'medium',
      inputSchema: { type: 'object', properties: { runId: RUN_ID }, required: ['runId'], additionalProperties: false },
      outputSchema: OUTPUT_SCHEMAS['service.runs.cancel'],
      // stops work for good (not undoable); canceling twice changes nothing more (the second call reports the status)
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      builtIn: true,
      async run(ctx, input) {
        if (!isUuid(input.runId)) throw notARun(input.runId);
        return cancelRun(deps.db, { appHandle: ctx.appHandle, shop: ctx.shop }, input.runId, { events: deps.events, via: 'mcp' });
      },
    },
    {
      name: 'service.runs.retry',
      title: 'Retry a run',
      description:
        "Runs a completed, failed or canceled run of the token's shop again. mode `resume` (default) keeps the completed steps' " +
        'results and replays them; `reset` deletes every step result and starts over. An active run cannot be retried (-32000).',
      requiredPermissions: ['retry_runs'],
      riskLevel: 'high',
      inputSchema: {
        type: 'object',
        properties: {
          runId: RUN_ID,
          mode: { type: 'string', enum: ['resume', 'reset'], description: 'resume (default) or reset.' },
        },
        required: ['runId'],
        additionalProperties: false,
      },
      outputSchema: OUTPUT_SCHEMAS['service.runs.retry'],
      // runs the flow again (it may act outside the service); reset deletes step results
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
      builtIn: true,
      async run(ctx, input) {
        if (!isUuid(input.runId)) throw notARun(input.runId);
        const mode = (input.mode as 'resume' | 'reset' | undefined) ?? 'resume';
        return retryRun(deps.db, deps.registry, { appHandle: ctx.appHandle, shop: ctx.shop }, input.runId, mode);
      },
    },
  ];
}
