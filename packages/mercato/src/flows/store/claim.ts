/**
 * The claim (docs/architecture.md, "The claim"): which due runs a worker takes, fair to every tenant.
 *
 * Tenants are served round-robin, in SQL, with no coordinator: a claim walks the tenants that have claimable runs in
 * (app, shop) order starting after the last tenant this worker served (its cursor; the walk wraps around), keeps the
 * first `limit` tenants that have a due run, and takes an equal share of the claim from each, each tenant's runs in
 * its own order (priority, then due time). A tenant's backlog of any size therefore takes one share of a claim, never
 * the claim: another tenant's due run is taken by the next claim of any worker. The walk is a loose index scan of
 * `runs_fair_idx` (one index probe per tenant visited, at most WALK_MAX_TENANTS per claim), so its cost depends on
 * the number of tenants waiting, not on the size of any backlog.
 *
 * Runs of flows with a keyed `concurrency` or a `rateLimit` ("gated" runs, `runs_gated_idx`) are claimed apart
 * (`claimGated`): the same walk picks candidates, then, in one transaction, the keys' advisory locks serialise the
 * workers that check the same key, a fresh statement counts the slots in use and the starts in the window, and each
 * candidate is claimed or set aside (`available_at` moved to when it may go, `wait` saying why).
 */
import { sql } from 'drizzle-orm';
import type { Database } from '../../db/engine.ts';
import { type Exec, prepared } from '../../db/sql.ts';
import type { FlowShaping } from '../registry.ts';
import type { ClaimedRun } from './leases.ts';

/** A claim visits at most this many tenants (those with only future runs included); the cursor moves on past them. */
export const WALK_MAX_TENANTS = 256;
/** A run waiting for a concurrency slot is looked at again after this long, unless a freed slot wakes it first. */
export const CONCURRENCY_RECHECK_MS = 2000;

/** Where a worker's next walk starts: the last tenant it took runs from (the walk begins just after it). */
export interface ClaimCursor {
  app: string;
  /** '' for global runs. */
  shop: string;
}

export const START_CURSOR: ClaimCursor = { app: '', shop: '' };

const FAIR = `status in ('pending','sleeping') and concurrency_key is null and rate_key is null`;
const GATED = `status in ('pending','sleeping') and (concurrency_key is not null or rate_key is not null)`;

/**
 * The walk over the tenants with claimable runs (`pred`: FAIR or GATED) from the cursor ($4, $5), wrapping around once,
 * at most $6 tenants visited, and of those the first $1 that have a due run, with their order `n` in the walk.
 */
interface WalkParams {
  limit: string;
  app: string;
  shop: string;
  max: string;
}

function walk(pred: string, p: WalkParams): string {
  const next = (after: string, wrappedFlag: string) => `(select * from (
        (select app_handle as a, coalesce(shop, '') as s, ${wrappedFlag} as w from runs
          where ${pred} and (app_handle, coalesce(shop, '')) > (${after})
          order by app_handle, coalesce(shop, '') limit 1)
        union all
        (select app_handle, coalesce(shop, ''), true from runs
          where ${pred} and ${wrappedFlag === 'false' ? 'true' : `not ${wrappedFlag}`}
          order by app_handle, coalesce(shop, '') limit 1)
      ) x limit 1)`;
  return `walk(a, s, w, n) as (
      select x.a, x.s, x.w, 1 from ${next(`${p.app}::text, ${p.shop}::text`, 'false')} x
      union all
      select nx.a, nx.s, nx.w, walk.n + 1 from walk, lateral ${next('walk.a, walk.s', 'walk.w')} nx
      where walk.n < ${p.max}::int and not (nx.w and (nx.a, nx.s) > (${p.app}::text, ${p.shop}::text))
    ), tenants as (
      select a, s, row_number() over (order by n) as ord from (
        select a, s, n from walk
        where exists (select 1 from runs where ${pred} and app_handle = walk.a and coalesce(shop, '') = walk.s and available_at <= now())
        limit ${p.limit}::int) found
    ), k as (select count(*)::int as c from tenants)`;
}

/**
 * The due runs of the walk's tenants: an equal share of $1 per tenant (the first `$1 mod tenants` get one more), each
 * tenant's in its order (priority, then due time), locked FOR UPDATE SKIP LOCKED.
 */
function shares(pred: string, columns: string, limit: string): string {
  return `select r.*, t.ord from tenants t cross join k, lateral (
      select ${columns} from runs
      where ${pred} and app_handle = t.a and coalesce(shop, '') = t.s and available_at <= now()
      order by priority desc nulls last, available_at
      limit (${limit}::int / k.c) + case when t.ord <= ${limit}::int % k.c then 1 else 0 end
      for update skip locked) r`;
}

const CLAIM_SET = `attempt = r.attempt + case when r.status = 'pending' and not r.same_attempt then 1 else 0 end,
    attempt_elapsed_ms = case when r.status = 'pending' and not r.same_attempt then 0 else r.attempt_elapsed_ms end,
    same_attempt = false,
    status = 'running',
    lease_owner = $2::text,
    lease_expires_at = now() + $3::int * interval '1 millisecond',
    started_at = coalesce(r.started_at, now()),
    debounce_key = null,
    wait = null,
    updated_at = now()`;

const CLAIM_RETURNING = `r.id, r.app_handle as "appHandle", r.shop, r.flow_name as "flowName", r.input, r.attempt,
    r.attempt - r.attempt_base as "budgetAttempt", r.retry_policy as "retryPolicy", r.lost_leases as "lostLeases",
    r.attempt_elapsed_ms as "attemptElapsedMs", due.fresh, r.trace_context as "traceContext",
    r.concurrency_key as "concurrencyKey", due.ord`;

const fairClaimStatement = prepared(
  'claim_fair',
  `with recursive ${walk(FAIR, { limit: '$1', app: '$4', shop: '$5', max: '$6' })}, due as (${shares(FAIR, 'id, started_at is null as fresh', '$1')})
  update runs r set ${CLAIM_SET}
  from due where r.id = due.id
  returning ${CLAIM_RETURNING}`,
);

/** The claim before fairness: every tenant's due runs in one FIFO (kept behind MERCATO_BENCH_FIFO_CLAIM for bench:tenancy). */
const fifoClaimStatement = prepared(
  'claim_fifo',
  `with due as (
    select id, started_at is null as fresh, 0 as ord from runs
    where ${FAIR} and available_at <= now()
    order by available_at
    limit $1::int
    for update skip locked
  )
  update runs r set ${CLAIM_SET}
  from due where r.id = due.id
  returning ${CLAIM_RETURNING}`,
);

type ClaimRow = ClaimedRun & { ord: number | string };

/** The gated candidates the claim may take ($1, a uuid[]): claimed, and each rate-limited one's start recorded. */
const gatedClaimStatement = prepared(
  'claim_gated',
  `with due as (
    select id, started_at is null as fresh, 0 as ord from runs where id = any($1::uuid[]) and status in ('pending','sleeping')
  ), started as (
    insert into rate_starts (key, at)
    select r.rate_key, clock_timestamp() from runs r join due on due.id = r.id where r.rate_key is not null
    returning key
  )
  update runs r set ${CLAIM_SET}
  from due where r.id = due.id
  returning ${CLAIM_RETURNING}`,
);

/** The cursor after a claim: the tenant of the claimed run that came last in the walk. */
function nextCursor(rows: readonly ClaimRow[], cursor: ClaimCursor): ClaimCursor {
  let last: ClaimRow | undefined;
  for (const r of rows) if (!last || Number(r.ord) > Number(last.ord)) last = r;
  return last ? { app: last.appHandle, shop: last.shop ?? '' } : cursor;
}

function strip(rows: ClaimRow[]): ClaimedRun[] {
  for (const r of rows) delete (r as Partial<ClaimRow>).ord;
  return rows;
}

/**
 * Claims up to `limit` due runs of ungated flows, fair to every tenant (above), on the database clock. Returns the runs
 * and the cursor for the next claim. `fifo` is the claim before fairness (benchmarks only).
 */
export async function claimFair(
  exec: Exec,
  leaseToken: string,
  limit: number,
  leaseMs: number,
  cursor: ClaimCursor,
  fifo = false,
): Promise<{ runs: ClaimedRun[]; cursor: ClaimCursor }> {
  const rows = await exec<ClaimRow>(
    fifo
      ? fifoClaimStatement(limit, leaseToken, leaseMs)
      : fairClaimStatement(limit, leaseToken, leaseMs, cursor.app, cursor.shop, WALK_MAX_TENANTS),
  );
  return { cursor: nextCursor(rows, cursor), runs: strip(rows) };
}

// ------------------------------------------------------------------------------------------------
// Gated runs: keyed concurrency and rate limits

interface Candidate {
  id: string;
  appHandle: string;
  shop: string | null;
  flowName: string;
  concurrencyKey: string | null;
  rateKey: string | null;
  wait: { reason?: string; heldBy?: string | null } | null;
  ord: number | string;
}

const gatedCandidatesStatement = prepared(
  'claim_gated_candidates',
  `with recursive ${walk(GATED, { limit: '$1', app: '$2', shop: '$3', max: '$4' })}
  ${shares(
    GATED,
    `id, app_handle as "appHandle", shop, flow_name as "flowName", concurrency_key as "concurrencyKey", rate_key as "rateKey", wait`,
    '$1',
  )}`,
);

/** A run the gated claim set aside, for the `run.waiting` event. */
export interface SetAside {
  runId: string;
  flow: string;
  appHandle: string;
  shop: string | null;
  reason: 'rate_limited' | 'concurrency';
  until: Date;
  heldBy: string | null;
  /** The shaping key as the flow's key function gave it. */
  key: string;
  /** False when the run was already waiting for the same reason (not a new wait). */
  changed: boolean;
}

/** The user's key inside a stored `[app, flow, key]`. */
export function userKey(stored: string): string {
  try {
    const parsed = JSON.parse(stored) as unknown;
    return Array.isArray(parsed) && typeof parsed[2] === 'string' ? parsed[2] : stored;
  } catch {
    return stored;
  }
}

/** The stored form of a shaping key: `[app, flow, key]` as JSON (unambiguous whatever the parts hold). */
export function storedKey(appHandle: string, flow: string, key: string): string {
  return JSON.stringify([appHandle, flow, key]);
}

/**
 * Claims up to `limit` due gated runs (keyed concurrency, rate limits) fairly across tenants, and sets aside the due
 * candidates whose key is full. `shapingOf` gives a flow's rules (null for a flow this worker does not know: its runs
 * are left alone). One transaction; the keys' advisory locks are taken in one order, so workers never deadlock.
 */
export async function claimGated(
  db: Database,
  leaseToken: string,
  limit: number,
  leaseMs: number,
  cursor: ClaimCursor,
  shapingOf: (flow: string) => FlowShaping | null,
): Promise<{ runs: ClaimedRun[]; cursor: ClaimCursor; setAside: SetAside[] }> {
  return db.transaction(async (exec) => {
    const candidates = await exec<Candidate>(gatedCandidatesStatement(limit, cursor.app, cursor.shop, WALK_MAX_TENANTS));
    if (candidates.length === 0) return { runs: [], cursor, setAside: [] };
    const known = candidates.filter((c) => shapingOf(c.flowName) !== null);
    const cKeys = [...new Set(known.map((c) => c.concurrencyKey).filter((k): k is string => k !== null))];
    const rKeys = new Map<string, number>();
    for (const c of known) if (c.rateKey !== null) rKeys.set(c.rateKey, shapingOf(c.flowName)!.rateLimit?.periodMs ?? 1000);
    const allKeys = [...cKeys, ...rKeys.keys()];
    await exec(sql`select pg_advisory_xact_lock(h) from (
      select distinct hashtextextended(k, 0) as h from unnest(${`{${allKeys.map(pgArrayItem).join(',')}}`}::text[]) k order by 1) x`);
    // a statement of its own, after the locks: its snapshot sees every claim committed by the workers that held them
    const [state] = await exec<{
      slots: Record<string, { n: number; holder: string }> | null;
      starts: Record<string, { n: number; oldest: string }> | null;
      now: string;
    }>(sql`
      select
        (select jsonb_object_agg(k, jsonb_build_object('n', n, 'holder', holder)) from (
          select concurrency_key as k, count(*)::int as n, min(id::text) as holder from runs
          where concurrency_key = any(${`{${cKeys.map(pgArrayItem).join(',')}}`}::text[]) and status = 'running'
          group by 1) c) as slots,
        (select jsonb_object_agg(k, jsonb_build_object('n', n, 'oldest', oldest)) from (
          select u.k, count(*)::int as n, min(rs.at) as oldest
          from unnest(${`{${[...rKeys.keys()].map(pgArrayItem).join(',')}}`}::text[], ${`{${[...rKeys.values()].join(',')}}`}::float8[]) u(k, ms)
          join rate_starts rs on rs.key = u.k and rs.at > clock_timestamp() - u.ms * interval '1 millisecond'
          group by u.k) s) as starts,
        to_json(clock_timestamp()) #>> '{}' as now`);
    const now = new Date(state.now).getTime();
    const slots = new Map(Object.entries(state.slots ?? {}).map(([k, v]) => [k, { n: v.n, holder: v.holder }]));
    const starts = new Map(Object.entries(state.starts ?? {}).map(([k, v]) => [k, { n: v.n, oldest: new Date(v.oldest).getTime() }]));
    const take: Candidate[] = [];
    const aside: SetAside[] = [];
    for (const c of known) {
      const shaping = shapingOf(c.flowName)!;
      const slot = c.concurrencyKey !== null ? (slots.get(c.concurrencyKey) ?? { n: 0, holder: '' }) : null;
      const rate = c.rateKey !== null ? (starts.get(c.rateKey) ?? { n: 0, oldest: now }) : null;
      const base = { runId: c.id, flow: c.flowName, appHandle: c.appHandle, shop: c.shop };
      if (slot && shaping.concurrency && slot.n >= shaping.concurrency.limit) {
        aside.push({
          ...base,
          reason: 'concurrency',
          until: new Date(now + CONCURRENCY_RECHECK_MS),
          heldBy: slot.holder || null,
          key: userKey(c.concurrencyKey!),
          changed: c.wait?.reason !== 'concurrency' || c.wait?.heldBy !== (slot.holder || null),
        });
        continue;
      }
      if (rate && shaping.rateLimit && rate.n >= shaping.rateLimit.limit) {
        aside.push({
          ...base,
          reason: 'rate_limited',
          until: new Date(Math.max(rate.oldest + shaping.rateLimit.periodMs, now + 1)),
          heldBy: null,
          key: userKey(c.rateKey!),
          changed: c.wait?.reason !== 'rate_limited',
        });
        continue;
      }
      if (slot && c.concurrencyKey !== null) {
        slot.n++;
        slot.holder ||= c.id;
        slots.set(c.concurrencyKey, slot);
      }
      if (rate && c.rateKey !== null) {
        if (rate.n === 0) rate.oldest = now;
        rate.n++;
        starts.set(c.rateKey, rate);
      }
      take.push(c);
    }
    let runs: ClaimRow[] = [];
    if (take.length > 0) {
      runs = await exec<ClaimRow>(gatedClaimStatement(`{${take.map((c) => c.id).join(',')}}`, leaseToken, leaseMs));
    }
    if (aside.length > 0) {
      await exec(sql`
        update runs r set available_at = v.until, wait = v.wait, updated_at = now()
        from jsonb_to_recordset(${JSON.stringify(
          aside.map((a) => ({
            id: a.runId,
            until: a.until.toISOString(),
            wait: { reason: a.reason, heldBy: a.heldBy, key: a.key },
          })),
        )}::jsonb) as v(id uuid, until timestamptz, wait jsonb)
        where r.id = v.id`);
    }
    if (rKeys.size > 0) {
      // the window's starts are all this claim needs of a key's log: older ones go
      await exec(sql`
        delete from rate_starts rs using unnest(${`{${[...rKeys.keys()].map(pgArrayItem).join(',')}}`}::text[], ${`{${[...rKeys.values()].join(',')}}`}::float8[]) u(k, ms)
        where rs.key = u.k and rs.at <= clock_timestamp() - u.ms * interval '1 millisecond'`);
    }
    const cursorAfter = nextCursor(candidates as unknown as ClaimRow[], cursor);
    return { runs: strip(runs), cursor: cursorAfter, setAside: aside };
  });
}

/** An element of a PostgreSQL array literal, quoted. */
function pgArrayItem(value: string): string {
  return `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

/**
 * A slot of `concurrencyKey` was freed (its run completed, failed, slept or was handed back): the runs set aside
 * waiting for one become due now, up to `count` of them, oldest wait first.
 */
export function wakeConcurrencyWaiters(exec: Exec, concurrencyKey: string, count: number) {
  return exec<{ id: string }>(sql`
    update runs set available_at = now(), updated_at = now()
    where id in (
      select id from runs
      where concurrency_key = ${concurrencyKey} and status = 'pending' and available_at > now() and wait->>'reason' = 'concurrency'
      order by available_at
      limit ${count})
    returning id`);
}
