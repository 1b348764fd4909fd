export { type PruneOptions, type PruneReport, type Pruner, type TableReport, PERIOD_KEYS, createPruner, prunePass } from './pruner.ts';
export { PRUNE_TABLES, type PruneTable } from './store.ts';
