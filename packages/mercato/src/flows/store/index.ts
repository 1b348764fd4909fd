/** Every SQL statement of runs and steps, by role (flows/README.md): runs.ts, leases.ts, steps.ts, queue.ts. */
export * from './runs.ts';
export * from './leases.ts';
export * from './steps.ts';
export * from './queue.ts';
