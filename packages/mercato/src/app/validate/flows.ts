/** Flows, retry policies (app and flow level) and the worker options. */
import { MAX_TIMER_MS, isTimerDelay } from '../duration.ts';
import {
  at,
  checkKnownKeys,
  got,
  isFunction,
  isPlainObject,
  isPositiveFinite,
  isPositiveInteger,
  isSchema,
  type Problems,
} from './util.ts';
import { checkShaping } from './shaping.ts';

export function checkFlows(problems: Problems, flows: unknown): void {
  if (flows === undefined) {
    problems.add('flows', 'is required (an object of flow definitions; use {} when the app has none)');
    return;
  }
  if (!isPlainObject(flows)) {
    problems.add('flows', `must be an object mapping keys to flow definitions ${got(flows)}`);
    return;
  }
  for (const [key, flow] of Object.entries(flows)) checkFlow(problems, at('flows', key), key, flow);
}

function checkFlow(problems: Problems, path: string, key: string, flow: unknown): void {
  if (!isPlainObject(flow)) {
    problems.add(path, `must be a flow definition object ${got(flow)}`);
    return;
  }
  if (typeof flow.name !== 'string')
    problems.add(at(path, 'name'), `must be a string equal to its key ${JSON.stringify(key)} ${got(flow.name)}`);
  else if (flow.name !== key) problems.add(at(path, 'name'), `must equal its key ${JSON.stringify(key)} ${got(flow.name)}`);
  if (flow.description !== undefined && typeof flow.description !== 'string') {
    problems.add(at(path, 'description'), `must be a string ${got(flow.description)}`);
  }
  if (!isSchema(flow.input))
    problems.add(at(path, 'input'), `must be a schema (an object with safeParse, e.g. z.object({...})) ${got(flow.input)}`);
  if (!isFunction(flow.run)) problems.add(at(path, 'run'), `must be a function ${got(flow.run)}`);
  if (flow.timeout !== undefined)
    checkTimerMs(problems, at(path, 'timeout'), flow.timeout, 'must be a positive finite number of milliseconds');
  if (flow.retryPolicy !== undefined) checkRetryPolicy(problems, at(path, 'retryPolicy'), flow.retryPolicy);
  checkShaping(problems, path, flow, true);
}

const RETRY_KEYS = ['maxAttempts', 'initialIntervalMs', 'backoffCoefficient', 'maxIntervalMs'] as const;

/** Same rules at app level (`retryPolicy`) and flow level (`flows.<key>.retryPolicy`). Undefined fields are allowed. */
export function checkRetryPolicy(problems: Problems, path: string, policy: unknown): void {
  if (!isPlainObject(policy)) {
    problems.add(path, `must be an object with some of ${RETRY_KEYS.join(', ')} ${got(policy)}`);
    return;
  }
  checkKnownKeys(problems, path, policy, RETRY_KEYS, 'retry policy field');
  for (const key of RETRY_KEYS) {
    const value = policy[key];
    if (value === undefined) continue;
    if (key === 'maxAttempts') {
      if (!isPositiveInteger(value)) problems.add(at(path, key), `must be a positive integer ${got(value)}`);
    } else if (key === 'backoffCoefficient') {
      if (!isPositiveFinite(value)) problems.add(at(path, key), `must be a positive finite number ${got(value)}`);
    } else checkTimerMs(problems, at(path, key), value);
  }
}

/** A delay or duration that ends up in a Node.js timer: Node fires a timer of more than 2^31 − 1 ms after 1 ms. */
function checkTimerMs(problems: Problems, path: string, value: unknown, notPositive = 'must be a positive finite number'): void {
  if (!isPositiveFinite(value)) problems.add(path, `${notPositive} ${got(value)}`);
  else if (!isTimerDelay(value))
    problems.add(path, `must be at most ${MAX_TIMER_MS} ms (about 24.8 days; Node.js fires a longer timer after 1 ms) ${got(value)}`);
}

const WORKER_KEYS = [
  'concurrency',
  'pollIntervalMs',
  'pollMaxIntervalMs',
  'pollBackoffCoefficient',
  'leaseDurationMs',
  'prefetch',
] as const;

/** A worker may claim at most this many runs ahead of its slots (one claim statement carries them). */
export const MAX_PREFETCH = 1000;

export function checkWorker(problems: Problems, worker: unknown): void {
  if (worker === undefined) return;
  if (!isPlainObject(worker)) {
    problems.add('worker', `must be an object with some of ${WORKER_KEYS.join(', ')} ${got(worker)}`);
    return;
  }
  checkKnownKeys(problems, 'worker', worker, WORKER_KEYS, 'worker option');
  for (const key of WORKER_KEYS) {
    const value = worker[key];
    if (value === undefined) continue;
    if (key === 'concurrency') {
      if (!isPositiveInteger(value)) problems.add(at('worker', key), `must be a positive integer ${got(value)}`);
    } else if (key === 'prefetch') {
      if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > MAX_PREFETCH)
        problems.add(at('worker', key), `must be an integer from 0 (off) to ${MAX_PREFETCH} ${got(value)}`);
    } else if (key === 'pollBackoffCoefficient') {
      if (!isPositiveFinite(value)) problems.add(at('worker', key), `must be a positive finite number ${got(value)}`);
    } else checkTimerMs(problems, at('worker', key), value);
  }
}
