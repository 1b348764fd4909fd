/**
 * The claim (docs/architecture.md, "The claim"): which due runs a worker takes, fair to every tenant.
 *
 * Tenants are served round-robin, in SQL, with no coordinator: a claim walks the tenants that have claimable runs in
 * (app, shop) order starting after where this worker's previous walk ended (its cursor; the walk wraps around), keeps
 * the first `limit` tenants that have a due run, and takes a share of the claim from each (equal, or weighted by the
 * priority of the tenant's best due run: PRIORITY_DOUBLING; at least one run each), each tenant's runs in its own order
 * (priority, then due time). A tenant's backlog of any size therefore takes one share of a claim, never the claim:
 * another tenant's due run is taken by the next claim of any worker. The walk is a loose index scan of `runs_fair_idx`
 * (one index probe per tenant visited, at most WALK_MAX_TENANTS per claim; a walk cut there says `more` and the next
 * claim goes on from where it stopped), so its cost depends on the number of tenants waiting, not on any backlog.
 *
 * Runs of flows with a keyed `concurrency` or a `rateLimit` ("gated" runs, `runs_gated_idx`) are claimed apart
 * (`claimGated`): the same walk picks candidates, then, in one transaction, the keys' advisory locks serialise the
 * workers that check the same key, a fresh statement counts the slots in use and the starts in the window, and each
 * candidate is claimed or set aside (`available_at` moved to when it may go, `wait` saying why).
 */
import { sql } from 'drizzle-orm';
import type { Database } from '../../db/engine.ts';
import { type Exec, prepared, preparedAsSql } from '../../db/sql.ts';
import type { FlowShaping } from '../registry.ts';
import type { ClaimedRun } from './leases.ts';

/** A claim visits at most this many tenants (those with only future runs included); the cursor moves on past them. */
export const WALK_MAX_TENANTS = 256;
/** A run waiting for a concurrency slot is looked at again after this long, unless a freed slot wakes it first. */
export const CONCURRENCY_RECHECK_MS = 2000;

/** Where a worker's next walk starts: where its previous walk ended (the walk begins just after it). */
export interface ClaimCursor {
  app: string;
  /** '' for global runs. */
  shop: string;
}

export const START_CURSOR: ClaimCursor = { app: '', shop: '' };

const FAIR = `status in ('pending','sleeping') and concurrency_key is null and rate_key is null`;
const GATED = `status in ('pending','sleeping') and (concurrency_key is not null or rate_key is not null)`;

/**
 * The walk over the tenants with claimable runs (`pred`: FAIR or GATED) from the cursor, wrapping around once, at most
 * `max` tenants visited, and of those the first `limit` that have a due run, with their order `n` in the walk.
 *
 * `jump` is a tenant known to have a backlog (the worker's hint: it gave more than its share in the worker's previous
 * claim), with the priority of its best run then. The walk steps over its range of the index without reading it (every
 * probe is bounded below or above it) and the tenant joins the claim's tenants last, with that priority's weight. A
 * probe that lands in a backlog's range reads the index entries of the runs claimed just before (not yet removable)
 * until it meets a live one, so a walk that landed there read the backlog's busiest pages once more per claim.
 */
interface WalkParams {
  limit: string;
  app: string;
  shop: string;
  max: string;
  /** The jumped tenant's app, shop and priority (SQL expressions; the app null for none). */
  jump?: { app: string; shop: string; priority: string };
}

function walk(pred: string, p: WalkParams): string {
  const jp = p.jump ?? { app: 'null', shop: 'null', priority: 'null' };
  const j = { app: `${jp.app}::text`, shop: `${jp.shop}::text`, priority: `${jp.priority}::int` };
  const key = `(app_handle, coalesce(shop, ''))`;
  const jumpKey = `(${j.app}, ${j.shop})`;
  const order = `order by app_handle, coalesce(shop, ''), priority desc nulls last, available_at limit 1`;
  // the tenants the walk finds: the claim's size, less the jumped tenant's place (at least one, so a claim of one run
  // still serves the walk's tenants before a backlog)
  const foundLimit = `greatest(${p.limit}::int - case when ${j.app} is null then 0 else 1 end, 1)`;
  const cols = (w: string) => `app_handle as a, coalesce(shop, '') as s, ${w} as w, priority as p, available_at as t`;
  // the next tenant after `after` (its first entry in the index order, priority desc then due time: its best run,
  // whose priority and due time the walk keeps, so that a tenant whose best run is due needs no second probe), never
  // inside the jumped tenant's range; when none is left, the first one from the start (the walk wraps, once)
  const next = (after: { a: string; s: string }, wrappedFlag: string) => {
    const unwrapped = wrappedFlag === 'false' ? 'true' : `not ${wrappedFlag}`;
    const X = `(${after.a}, ${after.s})`;
    const probe = (w: string, where: string) => `(select ${cols(w)} from runs where ${pred} and ${where} ${order})`;
    // every branch is bounded so that btree stops where it must: a row comparison is used as a bound on its first
    // column only, so a bound below the jumped tenant is spelled out column by column
    return `(select * from (
        ${probe(wrappedFlag, `${after.a} = ${j.app} and app_handle = ${after.a} and coalesce(shop, '') > ${after.s} and coalesce(shop, '') < ${j.shop}`)}
        union all
        ${probe(wrappedFlag, `${after.a} < ${j.app} and app_handle = ${after.a} and coalesce(shop, '') > ${after.s}`)}
        union all
        ${probe(wrappedFlag, `${after.a} < ${j.app} and app_handle > ${after.a} and app_handle < ${j.app}`)}
        union all
        ${probe(wrappedFlag, `${after.a} < ${j.app} and app_handle = ${j.app} and coalesce(shop, '') < ${j.shop}`)}
        union all
        ${probe(wrappedFlag, `(${j.app} is null or ${X} >= ${jumpKey}) and ${key} > ${X}`)}
        union all
        ${probe(wrappedFlag, `${X} < ${jumpKey} and ${key} > ${jumpKey}`)}
        union all
        ${probe('true', `${unwrapped} and app_handle < ${j.app}`)}
        union all
        ${probe('true', `${unwrapped} and app_handle = ${j.app} and coalesce(shop, '') < ${j.shop}`)}
        union all
        ${probe('true', `${unwrapped} and ${j.app} is null`)}
        union all
        ${probe('true', `${unwrapped} and ${key} > ${jumpKey}`)}
      ) x limit 1)`;
  };
  return `walk(a, s, w, p, t, n) as (
      select x.a, x.s, x.w, x.p, x.t, 1 from ${next({ a: `${p.app}::text`, s: `${p.shop}::text` }, 'false')} x
      union all
      select nx.a, nx.s, nx.w, nx.p, nx.t, walk.n + 1 from walk, lateral ${next({ a: 'walk.a', s: 'walk.s' }, 'walk.w')} nx
      where walk.n < ${p.max}::int and not (nx.w and (nx.a, nx.s) > (${p.app}::text, ${p.shop}::text))
    ), found as (
      select walk.a, walk.s, walk.n, power(2, top.priority / ${PRIORITY_DOUBLING}::float8) as weight from walk, lateral (
        select * from (
          (select walk.p as priority where walk.t <= now())
          union all
          (select priority from runs
            where ${pred} and app_handle = walk.a and coalesce(shop, '') = walk.s and available_at <= now()
            order by priority desc nulls last, available_at limit 1)
        ) best limit 1) top
      limit ${foundLimit}
    ), tenants as (
      select a, s, weight, row_number() over (order by n) as ord from (
        select * from found
        union all
        select ${j.app}::text, ${j.shop}::text, 2147483647, power(2, ${j.priority}::int / ${PRIORITY_DOUBLING}::float8)
        where ${j.app} is not null) x
    ), k as (select count(*)::int as c, sum(weight) as w from tenants),
    walk_end as (
      select coalesce(last_found.a, last_walked.a) as a, coalesce(last_found.s, last_walked.s) as s,
        last_found.a is not null or coalesce(last_walked.n, 0) >= ${p.max}::int as more
      from (select 1) one
      left join lateral (select a, s from found where (select count(*) from found) = ${foundLimit}
        order by n desc limit 1) last_found on true
      left join lateral (select a, s, n from walk order by n desc limit 1) last_walked on true
    )`;
}

/**
 * A tenant's weight in a claim doubles with every PRIORITY_DOUBLING of the priority of its best due run: priority 25
 * gets twice the share of priority 0, 100 sixteen times; every tenant with a due run gets at least one run per claim.
 */
export const PRIORITY_DOUBLING = 25;

/**
 * The due runs of the walk's tenants, in two passes. First each tenant's share of $1 by its weight (at least one), each
 * tenant's runs in its order (priority, then due time), locked FOR UPDATE SKIP LOCKED. A claim whose tenants had fewer
 * due runs than their shares is short: the shortfall is then taken, split evenly, from the tenants that filled their
 * share (they may have more), after the runs they gave already. So a tenant's backlog never takes more than its share
 * while another tenant has a due run, and never waits for one claim per share when nobody else has any (a claim of
 * one big tenant and a few one-run tenants is full, as the FIFO claim's is). Ranked round-robin (every tenant's first
 * run, then every tenant's second…, the second pass after the first) and cut to $1 (a run locked beyond the cut is
 * left as it was). The second pass brings the claim up to `fill` runs at most (default $1): a worker claiming beyond its
 * own needs (to pick up a dispatch just announced) takes the shares, not more of a backlog. The tenants in `skip`
 * (`app || chr(31) || shop`) get no share of the first pass: those the worker has runs of in its queue already, when
 * it claims beyond its needs. The tenants in `hint` (same form; backlogs, the worker's previous claim said) read up to
 * `fill` runs in the first pass (split by weight when several are hinted): the runs beyond their share rank as the
 * second pass's do, so the claim is the same, but their range of the index is read once. The second pass then serves
 * only the tenants not hinted; a backlog that was not hinted gets its part of the shortfall there, round-robin with
 * the hinted ones' extra runs, and is hinted by the next claim.
 */
function shares(pred: string, columns: string, limit: string, fill = limit, skip = `'{}'`, hint = `'{}'`): string {
  const due = (t: string) => `select ${columns}, priority as priority_, available_at as available_at_ from runs
        where ${pred} and app_handle = ${t}.a and coalesce(shop, '') = ${t}.s and available_at <= now()
        order by priority desc nulls last, available_at`;
  const rn = `row_number() over (partition by qt.ord order by q.priority_ desc, q.available_at_)`;
  return `with quota as (
      select t.a, t.s, t.ord, q0.base, q0.hinted,
        case when q0.skipped then 0
          when q0.hinted then greatest(q0.base, ceil(least(${fill}::int, ${limit}::int) * t.weight
            / sum(case when q0.hinted then t.weight end) over ()))::int
          else q0.base end as share
      from tenants t cross join k, lateral (
        select t.a || chr(31) || t.s = any(${skip}::text[]) as skipped,
          t.a || chr(31) || t.s = any(${hint}::text[]) and not t.a || chr(31) || t.s = any(${skip}::text[]) as hinted,
          greatest(1, ceil(${limit}::int * t.weight / k.w))::int as base) q0
    ), first_pass as (
      select q.*, qt.ord, ${rn} as rn, case when ${rn} > qt.base then 2 else 1 end as pass
      from quota qt, lateral (${due('qt')} limit qt.share for update skip locked) q
    ), filled as (
      select qt.* from quota qt where not qt.hinted and qt.share = (select count(*) from first_pass f where f.ord = qt.ord)
    ), short as (
      select greatest(0, least(${fill}::int, ${limit}::int) - (select count(*) from first_pass where pass = 1))::int as n,
        (select count(*) from filled)::int as tenants
    ), second_pass as (
      select q.*, fq.ord, fq.share + row_number() over (partition by fq.ord order by q.priority_ desc, q.available_at_) as rn, 2 as pass
      from filled fq cross join short, lateral (
        select * from (${due('fq')} offset fq.share limit ceil(short.n::float8 / greatest(short.tenants, 1))::int for update skip locked) x
        where x.id not in (select id from first_pass)) q
      where short.n > 0
    )
    select * from (
      select x.*, row_number() over (order by x.pass, x.rn, x.ord) as rank from (
        select * from first_pass union all select * from second_pass) x) ranked
    where rank <= ${limit}::int`;
}

/**
 * The claim's update. `startsNow` tells the runs whose flow body starts at once (a free slot waits for each: their
 * `started_at` is set now); the others are claimed ahead into the worker's local queue and wait there (`wait` says
 * `claimed`) until the worker starts them and records their start (store/leases.ts `completeRuns`' marks).
 */
function claimSet(startsNow: string): string {
  return `attempt = r.attempt + case when r.status = 'pending' and not r.same_attempt then 1 else 0 end,
    attempt_elapsed_ms = case when r.status = 'pending' and not r.same_attempt then 0 else r.attempt_elapsed_ms end,
    same_attempt = false,
    status = 'running',
    lease_owner = $2::text,
    lease_expires_at = now() + $3::int * interval '1 millisecond',
    started_at = case when ${startsNow} then coalesce(r.started_at, now()) else r.started_at end,
    debounce_key = null,
    wait = case when ${startsNow} then null else '{"reason":"claimed"}'::jsonb end,
    updated_at = now()`;
}

const CLAIM_RETURNING = `r.id, r.app_handle as "appHandle", r.shop, r.flow_name as "flowName", r.input, r.attempt,
    r.attempt - r.attempt_base as "budgetAttempt", r.retry_policy as "retryPolicy", r.lost_leases as "lostLeases",
    r.attempt_elapsed_ms as "attemptElapsedMs", due.fresh, r.trace_context as "traceContext",
    r.concurrency_key as "concurrencyKey", due.ord, due.rank <= $7::int as "startsNow"`;

const fairClaimStatement = prepared(
  'claim_fair',
  `with recursive ${walk(FAIR, { limit: '$1', app: '$4', shop: '$5', max: '$6', jump: { app: '$11', shop: '$12', priority: '$13' } })}, due as (${shares(FAIR, 'id, started_at is null as fresh', '$1', '$8', '$9', '$10')}),
  upd as (
    update runs r set ${claimSet('due.rank <= $7::int')}
    from due where r.id = due.id and r.id = any(array(select id from due))
    returning ${CLAIM_RETURNING}, due.pass = 2 as "beyondShare", r.priority
  )
  select upd.*, walk_end.a as "walkApp", walk_end.s as "walkShop", walk_end.more from walk_end left join upd on true`,
);

/** The claim before fairness: every tenant's due runs in one FIFO (kept behind MERCATO_BENCH_FIFO_CLAIM for bench:tenancy). */
const fifoClaimStatement = prepared(
  'claim_fifo',
  `with due as (
    select q.*, 0 as ord, row_number() over () as rank from (
      select id, started_at is null as fresh from runs
      where ${FAIR} and available_at <= now()
      order by available_at
      limit $1::int
      for update skip locked) q
  )
  update runs r set ${claimSet('due.rank <= $4::int')}
  from due where r.id = due.id and r.id = any(array(select id from due))
  returning ${CLAIM_RETURNING.replace('$7', '$4')}`,
);

type ClaimRow = ClaimedRun & { ord: number | string; startsNow: boolean };

/** Where the walk ended, on every row of a claim (and alone on a row with no run when it claimed nothing). */
interface WalkEnd {
  walkApp: string | null;
  walkShop: string | null;
  /** The walk stopped before it went round every tenant: more tenants may have due runs. */
  more: boolean | string;
}

/** The cursor after a claim (where the walk ended: the next claim starts after it) and whether more may be due. */
function walkEnd(rows: readonly WalkEnd[], cursor: ClaimCursor): { cursor: ClaimCursor; more: boolean } {
  const first = rows[0];
  if (!first || first.walkApp === null) return { cursor, more: false };
  return { cursor: { app: first.walkApp, shop: first.walkShop ?? '' }, more: first.more === true || first.more === 't' };
}

/** The gated candidates the claim may take ($1, a uuid[]): claimed, and each rate-limited one's start recorded. */
const gatedClaimStatement = prepared(
  'claim_gated',
  `with due as (
    select id, started_at is null as fresh, 0 as ord, id = any($4::uuid[]) as now from runs where id = any($1::uuid[]) and status in ('pending','sleeping')
  ), started as (
    insert into rate_starts (key, at)
    select r.rate_key, clock_timestamp() from runs r join due on due.id = r.id where r.rate_key is not null
    returning key
  )
  update runs r set ${claimSet('due.now')}
  from due where r.id = due.id and r.id = any(array(select id from due))
  returning ${CLAIM_RETURNING.replace('due.rank <= $7::int', 'due.now')}`,
);

/** The claimed runs: those that start at once first, then those claimed ahead (in the walk's order). */
function strip(rows: ClaimRow[]): ClaimedRun[] {
  const now: ClaimedRun[] = [];
  const ahead: ClaimedRun[] = [];
  for (const r of rows) {
    const startsNow = r.startsNow === true || (r.startsNow as unknown) === 't';
    // the claim's own columns (ord, startsNow, walk…) stay on the row: deleting properties would slow every later access
    (startsNow ? now : ahead).push(r);
    r.claimedAhead = !startsNow;
  }
  return now.concat(ahead);
}

/** A tenant as `skip` of claimFair names it (the worker keys its per-tenant bookkeeping the same way). */
export const skipKey = (appHandle: string, shop: string | null) => `${appHandle}\u001f${shop ?? ''}`;

/** A tenant that gave more than its share in a claim, with the priority of its best run claimed then (claimFair). */
export interface Backlog {
  app: string;
  shop: string;
  priority: number;
}

/**
 * Claims up to `limit` due runs of ungated flows, fair to every tenant (above), on the database clock. The first
 * `startsNow` of them (in the walk's order) start at once; the others are claimed ahead (`claimedAhead`). Returns the runs
 * (those starting at once first), the cursor for the next claim, and `beyond`: the tenants that gave more than their
 * share because the others had too few due runs (backlogs), the one that gave the most first. A worker passes those back
 * as `hint` in its next claim: a hinted tenant's first pass then reads up to the whole claim at once (its runs beyond
 * its share still rank after every other tenant's share), and the walk steps over the first one's range (`walk`'s
 * `jump`), so a backlog's range of the index is read once per claim, not three times. `fifo` is the claim before
 * fairness (benchmarks only).
 */
export async function claimFair(
  exec: Exec,
  leaseToken: string,
  limit: number,
  leaseMs: number,
  cursor: ClaimCursor,
  options: { startsNow?: number; fifo?: boolean; fill?: number; skip?: readonly string[]; hint?: readonly Backlog[] } = {},
): Promise<{ runs: ClaimedRun[]; cursor: ClaimCursor; more: boolean; beyond: Backlog[] }> {
  const startsNow = options.startsNow ?? limit;
  const fill = Math.max(0, Math.min(options.fill ?? limit, limit));
  const hint = options.hint ?? [];
  const jump = hint[0];
  const rows = await exec<ClaimRow & WalkEnd & { beyondShare?: boolean | string; priority?: number }>(
    options.fifo
      ? fifoClaimStatement(limit, leaseToken, leaseMs, startsNow)
      : // a named prepared statement: planning the walk and its passes took 3–4 ms, as long as running them (with
        // a custom plan at every call); the generic plan reads each tenant's first rows by runs_fair_idx as well
        fairClaimStatement(
          limit,
          leaseToken,
          leaseMs,
          cursor.app,
          cursor.shop,
          WALK_MAX_TENANTS,
          startsNow,
          fill,
          textArray(options.skip ?? []),
          textArray(hint.map((h) => skipKey(h.app, h.shop))),
          jump?.app ?? null,
          jump?.shop ?? null,
          jump?.priority ?? null,
        ),
  );
  if (options.fifo) return { cursor, more: rows.length === limit, runs: strip(rows), beyond: [] };
  const end = walkEnd(rows, cursor);
  const claimed = rows.filter((r) => r.id !== null);
  // per tenant: its best claimed run's priority, and how many of its runs went beyond its share
  const tenants = new Map<string, Backlog & { n: number }>();
  for (const r of claimed) {
    const key = skipKey(r.appHandle, r.shop);
    let t = tenants.get(key);
    if (!t) tenants.set(key, (t = { app: r.appHandle, shop: r.shop ?? '', priority: Number(r.priority ?? 0), n: 0 }));
    t.priority = Math.max(t.priority, Number(r.priority ?? 0));
    if (r.beyondShare === true || r.beyondShare === 't') t.n++;
  }
  const backlogs = [...tenants.values()]
    .filter((t) => t.n > 0)
    .sort((x, y) => y.n - x.n)
    .map(({ app, shop, priority }) => ({ app, shop, priority }));
  return { ...end, runs: strip(claimed), beyond: backlogs };
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
  status: string;
}

const gatedCandidatesStatement = prepared(
  'claim_gated_candidates',
  `with recursive ${walk(GATED, { limit: '$1', app: '$2', shop: '$3', max: '$4' })}, c as (${shares(
    GATED,
    `id, app_handle as "appHandle", shop, flow_name as "flowName", concurrency_key as "concurrencyKey", rate_key as "rateKey", wait, status`,
    '$1',
  )})
  select c.*, walk_end.a as "walkApp", walk_end.s as "walkShop", walk_end.more from walk_end left join c on true`,
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
  startsNow = limit,
): Promise<{ runs: ClaimedRun[]; cursor: ClaimCursor; more: boolean; setAside: SetAside[] }> {
  return db.transaction(async (exec) => {
    const rows = await exec<Candidate & WalkEnd>(preparedAsSql(gatedCandidatesStatement(limit, cursor.app, cursor.shop, WALK_MAX_TENANTS)));
    const end = walkEnd(rows, cursor);
    const candidates = rows.filter((r) => r.id !== null);
    if (candidates.length === 0) return { runs: [], ...end, setAside: [] };
    const known = candidates.filter((c) => shapingOf(c.flowName) !== null);
    const cKeys = [...new Set(known.map((c) => c.concurrencyKey).filter((k): k is string => k !== null))];
    const rKeys = new Map<string, number>();
    for (const c of known) if (c.rateKey !== null) rKeys.set(c.rateKey, shapingOf(c.flowName)!.rateLimit?.periodMs ?? 1000);
    const allKeys = [...cKeys, ...rKeys.keys()];
    await exec(sql`select pg_advisory_xact_lock(h) from (
      select distinct hashtextextended(k, 0) as h from unnest(${textArray(allKeys)}::text[]) k order by 1) x`);
    // a statement of its own, after the locks: its snapshot sees every claim committed by the workers that held them
    const [state] = await exec<{
      slots: Record<string, { n: number; holder: string }> | null;
      starts: Record<string, { n: number; oldest: string }> | null;
      now: string;
    }>(sql`
      select
        (select jsonb_object_agg(k, jsonb_build_object('n', n, 'holder', holder)) from (
          select concurrency_key as k, count(*)::int as n, min(id::text) as holder from runs
          where concurrency_key = any(${textArray(cKeys)}::text[]) and status = 'running'
          group by 1) c) as slots,
        (select jsonb_object_agg(k, jsonb_build_object('n', n, 'oldest', oldest)) from (
          select u.k, count(*)::int as n, min(rs.at) as oldest
          from unnest(${textArray([...rKeys.keys()])}::text[], ${`{${[...rKeys.values()].join(',')}}`}::float8[]) u(k, ms)
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
      runs = await exec<ClaimRow>(
        gatedClaimStatement(
          `{${take.map((c) => c.id).join(',')}}`,
          leaseToken,
          leaseMs,
          `{${take
            .slice(0, startsNow)
            .map((c) => c.id)
            .join(',')}}`,
        ),
      );
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
        delete from rate_starts rs using unnest(${textArray([...rKeys.keys()])}::text[], ${`{${[...rKeys.values()].join(',')}}`}::float8[]) u(k, ms)
        where rs.key = u.k and rs.at <= clock_timestamp() - u.ms * interval '1 millisecond'`);
    }
    return { runs: strip(runs), ...end, setAside: aside };
  });
}

/** A PostgreSQL array literal of texts, each element quoted (for a `$n::text[]` parameter). */
function textArray(values: readonly string[]): string {
  return `{${values.map((v) => `"${v.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`).join(',')}}`;
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
      where concurrency_key = ${concurrencyKey} and status in ('pending','sleeping') and available_at > now()
        and wait->>'reason' = 'concurrency'
      order by available_at
      limit ${count})
    returning id`);
}
