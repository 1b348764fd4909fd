/** Prometheus metrics (docs/observability.md): the registry of a runtime, the request middleware, `GET /metrics`. */
export {
  type Metrics,
  type MetricsOptions,
  type QueueReading,
  type QueueSample,
  type QueueTenants,
  createMetrics,
  MAX_LABEL_VALUES,
} from './registry.ts';
export { METRICS_PATH, METRICS_UNAUTHORIZED, metricsEndpoint, requestMetrics, tokenMatches } from './http.ts';
