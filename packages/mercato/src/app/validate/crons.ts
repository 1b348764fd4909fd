/** Cron entries: schedule, flow, input (checked with the flow's schema), shops, name and time zone. */
import { Cron } from 'croner';
import { isShopDomain } from '../shop.ts';
import { at, checkKnownKeys, describe, got, isPlainObject, isSchema, type Problems, schemaIssues } from './util.ts';

/** A shop domain is `<name>.myshopify.com` (lower case): the one definition is in app/shop.ts. */
export { isShopDomain } from '../shop.ts';

export function isTimeZone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

/**
 * Returns a problem message, or undefined when croner accepts the expression (5 fields, or 6 with seconds first, or a
 * nickname such as `@daily`) and it fires at least once.
 */
export function cronExpressionProblem(schedule: string, timezone?: string): string | undefined {
  let job: Cron | undefined;
  try {
    job = new Cron(schedule, { paused: true, timezone, mode: '5-or-6-parts' });
    if (job.nextRun() === null) return `${JSON.stringify(schedule)} never fires (no date matches it)`;
    return undefined;
  } catch (error) {
    const reason = (error instanceof Error ? error.message : String(error)).replace(/^CronPattern: /, '');
    return `${JSON.stringify(schedule)} is not a valid cron expression: ${reason}`;
  } finally {
    job?.stop();
  }
}

const CRON_KEYS = ['name', 'schedule', 'flow', 'input', 'shops', 'timezone'] as const;

export function checkCrons(problems: Problems, crons: unknown, flows: unknown): void {
  if (crons === undefined) return;
  if (!Array.isArray(crons)) {
    problems.add('crons', `must be an array of cron entries ${got(crons)}`);
    return;
  }
  const flowMap = isPlainObject(flows) ? flows : undefined;
  const keys = new Map<string, string>();
  crons.forEach((entry, i) => {
    const path = at('crons', i);
    if (!isPlainObject(entry)) {
      problems.add(path, `must be a cron entry object ${got(entry)}`);
      return;
    }
    checkKnownKeys(problems, path, entry, CRON_KEYS, 'cron entry field');
    if (entry.name !== undefined && typeof entry.name !== 'string') problems.add(at(path, 'name'), `must be a string ${got(entry.name)}`);

    let timezone: string | undefined;
    if (entry.timezone !== undefined) {
      if (typeof entry.timezone !== 'string' || !isTimeZone(entry.timezone)) {
        problems.add(at(path, 'timezone'), `must be an IANA time zone such as "Europe/Paris" or "UTC" ${got(entry.timezone)}`);
      } else timezone = entry.timezone;
    }

    let scheduleOk = false;
    if (typeof entry.schedule !== 'string' || entry.schedule.trim() === '') {
      problems.add(at(path, 'schedule'), `must be a cron expression string ${got(entry.schedule)}`);
    } else {
      const problem = cronExpressionProblem(entry.schedule, timezone);
      if (problem) problems.add(at(path, 'schedule'), problem);
      else scheduleOk = true;
    }

    const flowKey = entry.flow;
    let flow: Record<string, unknown> | undefined;
    if (typeof flowKey !== 'string') problems.add(at(path, 'flow'), `must be the key of a registered flow ${got(flowKey)}`);
    else if (flowMap && !Object.hasOwn(flowMap, flowKey))
      problems.add(at(path, 'flow'), `${JSON.stringify(flowKey)} is not a registered flow`);
    else if (flowMap && isPlainObject(flowMap[flowKey])) flow = flowMap[flowKey] as Record<string, unknown>;

    if (flow && isSchema(flow.input)) checkCronInput(problems, at(path, 'input'), entry.input, flowKey as string, flow.input);
    checkShops(problems, at(path, 'shops'), entry.shops);

    if (scheduleOk && typeof flowKey === 'string') {
      const key = `${flowKey}:${entry.schedule}`;
      const first = keys.get(key);
      if (first !== undefined)
        problems.add(
          path,
          `duplicate cron key ${JSON.stringify(key)} (also used by ${first}); give one entry another schedule or merge their shops`,
        );
      else keys.set(key, path);
    }
  });
}

function checkCronInput(problems: Problems, path: string, input: unknown, flowKey: string, schema: unknown): void {
  const omitted = input === undefined;
  const issues = schemaIssues(schema, omitted ? {} : input, omitted ? '' : path);
  if (issues === 'async') return; // an async schema can only be checked when the cron fires
  if (issues instanceof Error) {
    problems.add(path, `the input schema of flow ${JSON.stringify(flowKey)} threw: ${issues.message}`);
    return;
  }
  for (const [issuePath, message] of issues) {
    if (omitted)
      problems.add(
        path,
        `omitted, so {} is used, which flow ${JSON.stringify(flowKey)} rejects: ${issuePath ? `${issuePath}: ` : ''}${message}`,
      );
    else problems.add(issuePath, message);
  }
}

function checkShops(problems: Problems, path: string, shops: unknown): void {
  if (shops === undefined || shops === 'global' || shops === 'all') return;
  const hint = '(the permanent shop domain "<name>.myshopify.com", lower case, without scheme or path)';
  if (typeof shops === 'string') {
    if (!isShopDomain(shops))
      problems.add(
        path,
        `must be 'global', 'all', a shop domain or an array of shop domains; ${JSON.stringify(shops)} is not a shop domain ${hint}`,
      );
    return;
  }
  if (!Array.isArray(shops)) {
    problems.add(path, `must be 'global', 'all', a shop domain or an array of shop domains ${got(shops)}`);
    return;
  }
  if (shops.length === 0) {
    problems.add(path, "must not be an empty array (use 'global' or 'all', or list shop domains)");
    return;
  }
  const seen = new Map<string, number>();
  shops.forEach((shop, i) => {
    if (!isShopDomain(shop)) problems.add(at(path, i), `${describe(shop)} is not a shop domain ${hint}`);
    else if (seen.has(shop)) problems.add(at(path, i), `duplicate shop ${JSON.stringify(shop)} (also at ${at(path, seen.get(shop)!)})`);
    else seen.set(shop, i);
  });
}
