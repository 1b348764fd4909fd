/**
 * The server keeps to the API contract of src/api/types.ts (`mercato/api`): the return type of each server function
 * that produces an /api answer is assignable to the API type, and has the same keys (so a field added on one side
 * only is caught too). Checked by `vitest` typecheck and by `npm run typecheck` (tsc). The answers a router builds
 * inline (watch, home, pages, errors) are checked over HTTP in contract.test.ts.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type * as Api from '../../src/api/types.ts';
import type {
  CronShops,
  DiscountMode,
  FieldType,
  FunctionType,
  PageKey,
  PageMode,
  RetryPolicy,
  RiskLevel,
  RunStatus,
} from '../../src/app/types.ts';
import type { listCrons, setCronEnabled } from '../../src/crons/service.ts';
import type { TickStatus } from '../../src/crons/store.ts';
import type { listCustomPages } from '../../src/custom-pages/service.ts';
import type { DispatchFn, Trigger, schemaIssuesBody } from '../../src/flows/dispatch.ts';
import type { RetryMode, bulkDeleteRuns, cancelRun, deleteRun, retryRun } from '../../src/flows/lifecycle.ts';
import type { listRuns } from '../../src/flows/list.ts';
import type { StatsRange } from '../../src/flows/schemas.ts';
import type { describeFlows } from '../../src/flows/service.ts';
import type { Stats } from '../../src/flows/stats.ts';
import type { getRun, listSteps } from '../../src/flows/store/index.ts';
import type { FunctionsService } from '../../src/functions/service.ts';
import type { OwnerFieldType } from '../../src/functions/kinds.ts';
import type { OwnerValues, UserError } from '../../src/functions/input.ts';
import type { pagesBody } from '../../src/http/pages.ts';
import type { searchLogs } from '../../src/logs/search.ts';
import type { LogLevel } from '../../src/logs/writer.ts';
import type { capabilitiesBody } from '../../src/mcp/router.ts';
import type { AuditStatus, TokenStatus } from '../../src/mcp/store.ts';
import type { TokenService } from '../../src/mcp/tokens.ts';
import type { DashboardStatus } from '../../src/providers/fields.ts';
import type { saveProviderConfig } from '../../src/providers/save.ts';
import type { checkProvider, listProviders } from '../../src/providers/service.ts';

type Answer<F extends (...args: any[]) => any> = NonNullable<Awaited<ReturnType<F>>>;
type Item<T> = T extends ReadonlyArray<infer I> ? I : never;
/** The keys of each member of a union (a union of key sets), for comparing the fields of two shapes. */
type Keys<T> = T extends unknown ? keyof T : never;
/** true when two unions have the same members. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

describe('unions and enums are the server’s', () => {
  it('equal', () => {
    expectTypeOf<Api.RunStatus>().toEqualTypeOf<RunStatus>();
    expectTypeOf<Api.Trigger>().toEqualTypeOf<Trigger>();
    expectTypeOf<Api.RetryPolicy>().toEqualTypeOf<RetryPolicy>();
    expectTypeOf<Api.CronShops>().toEqualTypeOf<CronShops>();
    expectTypeOf<Api.PageKey>().toEqualTypeOf<PageKey>();
    expectTypeOf<Api.PageMode>().toEqualTypeOf<PageMode>();
    expectTypeOf<Api.RetryMode>().toEqualTypeOf<RetryMode>();
    expectTypeOf<Api.LogLevel>().toEqualTypeOf<LogLevel>();
    expectTypeOf<Api.TickStatus>().toEqualTypeOf<TickStatus>();
    expectTypeOf<Api.FieldType>().toEqualTypeOf<FieldType>();
    expectTypeOf<Api.ProviderStatus>().toEqualTypeOf<DashboardStatus>();
    expectTypeOf<Api.FunctionType>().toEqualTypeOf<FunctionType>();
    expectTypeOf<Api.DiscountMode>().toEqualTypeOf<DiscountMode>();
    expectTypeOf<Api.OwnerFieldType>().toEqualTypeOf<OwnerFieldType>();
    expectTypeOf<Api.RiskLevel>().toEqualTypeOf<RiskLevel>();
    expectTypeOf<Api.McpTokenStatus>().toEqualTypeOf<TokenStatus>();
    expectTypeOf<Api.McpAuditStatus>().toEqualTypeOf<AuditStatus>();
    expectTypeOf<Api.StatsRange>().toEqualTypeOf<StatsRange>();
  });
});

describe('flows and runs', () => {
  it('GET /api/stats/runs, GET /api/stats/flows', () => {
    type Runs = Answer<Stats['runs']>;
    expectTypeOf<Runs>().toExtend<Api.RunStatsResponse>();
    expectTypeOf<keyof Runs>().toEqualTypeOf<keyof Api.RunStatsResponse>();
    expectTypeOf<keyof Item<Runs['buckets']>>().toEqualTypeOf<keyof Api.RunStatsBucket>();
    type Flows = Answer<Stats['flows']>;
    expectTypeOf<Flows>().toExtend<Api.FlowStatsResponse>();
    expectTypeOf<keyof Flows>().toEqualTypeOf<keyof Api.FlowStatsResponse>();
    expectTypeOf<keyof Item<Flows['flows']>>().toEqualTypeOf<keyof Api.FlowStatsRow>();
  });

  it('GET /api/flows', () => {
    type Server = Item<ReturnType<typeof describeFlows>>;
    expectTypeOf<Server>().toExtend<Api.FlowInfo>();
    expectTypeOf<keyof Server>().toEqualTypeOf<keyof Api.FlowInfo>();
    expectTypeOf<keyof Item<Server['crons']>>().toEqualTypeOf<keyof Api.FlowCron>();
  });

  it('POST /api/flows/:name/run', () => {
    expectTypeOf<Answer<DispatchFn>>().toEqualTypeOf<Api.DispatchResponse>();
  });

  it('GET /api/runs, GET /api/flows/:name/runs', () => {
    type Server = Answer<typeof listRuns>;
    expectTypeOf<Server>().toExtend<Api.RunListResponse>();
    expectTypeOf<keyof Server>().toEqualTypeOf<keyof Api.RunListResponse>();
    expectTypeOf<keyof Item<Server['runs']>>().toEqualTypeOf<keyof Api.RunRow>();
  });

  it('GET /api/runs/:id: the run and its steps', () => {
    type Run = Answer<typeof getRun>;
    type Step = Item<Answer<typeof listSteps>>;
    expectTypeOf<Run & { steps: Step[] }>().toExtend<Api.RunDetail>();
    expectTypeOf<keyof Run | 'steps'>().toEqualTypeOf<keyof Api.RunDetail>();
    expectTypeOf<Step>().toExtend<Api.StepRow>();
    expectTypeOf<keyof Step>().toEqualTypeOf<keyof Api.StepRow>();
  });

  it('cancel, retry, delete, bulk delete', () => {
    expectTypeOf<Answer<typeof cancelRun>>().toExtend<Api.CancelRunResponse>();
    expectTypeOf<keyof Answer<typeof cancelRun>>().toEqualTypeOf<keyof Api.CancelRunResponse>();
    expectTypeOf<Answer<typeof retryRun>>().toExtend<Api.RetryRunResponse>();
    expectTypeOf<keyof Answer<typeof retryRun>>().toEqualTypeOf<keyof Api.RetryRunResponse>();
    expectTypeOf<Answer<typeof deleteRun>>().toEqualTypeOf<Api.DeleteRunResponse>();
    expectTypeOf<Answer<typeof bulkDeleteRuns>>().toEqualTypeOf<Api.BulkDeleteResponse>();
  });

  it('400 issues of a schema check', () => {
    expectTypeOf<ReturnType<typeof schemaIssuesBody>>().toEqualTypeOf<Api.InputIssue[]>();
  });
});

describe('logs', () => {
  it('GET /api/runs/:id/logs', () => {
    type Server = Answer<typeof searchLogs>;
    expectTypeOf<Server>().toExtend<Api.LogSearchResponse>();
    expectTypeOf<keyof Server>().toEqualTypeOf<keyof Api.LogSearchResponse>();
    expectTypeOf<keyof Item<Server['logs']>>().toEqualTypeOf<keyof Api.LogRow>();
  });
});

describe('crons', () => {
  it('GET /api/crons, POST /api/crons/toggle', () => {
    type Server = Item<Answer<typeof listCrons>>;
    expectTypeOf<Server>().toExtend<Api.Cron>();
    expectTypeOf<keyof Server>().toEqualTypeOf<keyof Api.Cron>();
    expectTypeOf<keyof NonNullable<Server['lastTick']>>().toEqualTypeOf<keyof Api.CronTick>();
    expectTypeOf<Answer<typeof setCronEnabled>>().toEqualTypeOf<Api.CronToggleResponse>();
  });
});

describe('providers', () => {
  it('GET /api/providers, PUT /api/providers/:name, POST /api/providers/:name/check', () => {
    type Server = Item<Answer<typeof listProviders>>;
    expectTypeOf<Server>().toExtend<Api.Provider>();
    expectTypeOf<keyof Server>().toEqualTypeOf<keyof Api.Provider>();
    expectTypeOf<Keys<Item<Server['fields']>>>().toEqualTypeOf<keyof Api.ProviderField>();
    expectTypeOf<Answer<typeof saveProviderConfig>>().toExtend<Api.SaveProviderResponse>();
    expectTypeOf<keyof Answer<typeof saveProviderConfig>>().toEqualTypeOf<keyof Api.SaveProviderResponse>();
    expectTypeOf<Answer<typeof checkProvider>>().toEqualTypeOf<Api.ProviderCheckResponse>();
  });
});

describe('functions', () => {
  it('GET /api/functions', () => {
    type Server = Item<Answer<FunctionsService['listDefinitions']>>;
    expectTypeOf<Server>().toExtend<Api.FunctionDefinitionInfo>();
    expectTypeOf<keyof Server>().toEqualTypeOf<keyof Api.FunctionDefinitionInfo>();
    expectTypeOf<keyof Item<Server['ownerFields']>>().toEqualTypeOf<keyof Api.OwnerField>();
    // the configuration fields are provider fields without a password (so never `hasValue`) and with their path
    expectTypeOf<Exclude<Keys<Item<Server['fields']>>, 'hasValue'>>().toEqualTypeOf<keyof Api.ConfigField>();
  });

  it('GET /api/functions/:handle/instances', () => {
    type Server = Answer<FunctionsService['listInstances']>;
    expectTypeOf<Server>().toExtend<Api.InstanceListResponse>();
    expectTypeOf<keyof Server>().toEqualTypeOf<keyof Api.InstanceListResponse>();
    expectTypeOf<keyof Item<Server['instances']>>().toEqualTypeOf<keyof Api.FunctionInstanceInfo>();
    expectTypeOf<OwnerValues>().toExtend<Api.FunctionOwnerValues>();
    expectTypeOf<keyof OwnerValues>().toEqualTypeOf<keyof Api.FunctionOwnerValues>();
  });

  it('create, update, delete', () => {
    expectTypeOf<Answer<FunctionsService['createInstance']>>().toExtend<Api.CreateInstanceResponse>();
    expectTypeOf<keyof Answer<FunctionsService['createInstance']>>().toEqualTypeOf<keyof Api.CreateInstanceResponse>();
    expectTypeOf<Answer<FunctionsService['updateInstance']>>().toExtend<Api.UpdateInstanceResponse>();
    expectTypeOf<Same<Keys<Answer<FunctionsService['updateInstance']>>, keyof Api.UpdateInstanceResponse>>().toEqualTypeOf<true>();
    expectTypeOf<Answer<FunctionsService['deleteInstance']>>().toEqualTypeOf<Api.DeleteInstanceResponse>();
    expectTypeOf<UserError>().toEqualTypeOf<Api.UserError>();
  });
});

describe('MCP tokens', () => {
  it('GET /api/mcp/capabilities', () => {
    type Server = ReturnType<typeof capabilitiesBody>;
    expectTypeOf<Server>().toExtend<Api.McpCapabilities>();
    expectTypeOf<keyof Server>().toEqualTypeOf<keyof Api.McpCapabilities>();
    expectTypeOf<keyof Item<Server['permissions']>>().toEqualTypeOf<keyof Api.McpPermission>();
    expectTypeOf<keyof Item<Server['tools']>>().toEqualTypeOf<keyof Api.McpTool>();
    expectTypeOf<keyof Item<Server['resources']>>().toEqualTypeOf<keyof Api.McpResource>();
    expectTypeOf<keyof Item<Server['expiryOptions']>>().toEqualTypeOf<keyof Api.ExpiryOption>();
  });

  it('the token endpoints', () => {
    type Token = Item<Answer<TokenService['list']>>;
    expectTypeOf<Token>().toEqualTypeOf<Api.McpToken>();
    expectTypeOf<Answer<TokenService['detail']>>().toExtend<Api.McpTokenDetail>();
    expectTypeOf<keyof Item<Answer<TokenService['detail']>['audits']>>().toEqualTypeOf<keyof Api.McpAudit>();
    expectTypeOf<Item<Answer<TokenService['detail']>['audits']>>().toEqualTypeOf<Api.McpAudit>();
    expectTypeOf<Answer<TokenService['create']>>().toEqualTypeOf<Api.McpTokenSecretResponse>();
    expectTypeOf<Answer<TokenService['rotate']>>().toEqualTypeOf<Api.McpTokenSecretResponse>();
    // PUT …/permissions answers `{ ok: true, permissions: token.permissions }`
    expectTypeOf<{
      ok: true;
      permissions: Answer<TokenService['setPermissions']>['permissions'];
    }>().toEqualTypeOf<Api.SetMcpPermissionsResponse>();
  });
});

describe('pages', () => {
  it('GET /api/pages, GET /api/pages/custom', () => {
    expectTypeOf<ReturnType<typeof pagesBody>>().toEqualTypeOf<Api.PagesResponse>();
    type Server = Answer<typeof listCustomPages>;
    expectTypeOf<Server>().toExtend<Api.CustomPagesResponse>();
    expectTypeOf<keyof Server>().toEqualTypeOf<keyof Api.CustomPagesResponse>();
    expectTypeOf<keyof Item<Server['pages']>>().toEqualTypeOf<keyof Api.CustomPageEntry>();
  });
});
