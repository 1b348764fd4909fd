/**
 * OpenTelemetry traces (docs/tracing.md). createTracing() builds a tracer provider of one runtime, with an OTLP/HTTP
 * (JSON) exporter, when the environment names an endpoint; otherwise it returns undefined and the callers build no span
 * at all (every call site is guarded on `tracing`). The provider is never registered globally, so runtimes of one
 * process do not share exporters; only the async context manager (which carries the active span) is global.
 * The SDK (provider, exporter, context manager: about 250 ms of module loading) is imported only when tracing is on,
 * so a process without an endpoint (`mercato --version`, `mercato dev` by default) never loads it.
 */
import {
  type Attributes,
  type Context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  trace,
} from '@opentelemetry/api';
import type { Sampler } from '@opentelemetry/sdk-trace-node';

export { ROOT_CONTEXT, SpanKind, type Span, type Attributes };

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent (default: the active span); ROOT_CONTEXT starts a new trace. */
  parent?: Context;
  links?: Array<{ context: ReturnType<Span['spanContext']> }>;
}

export interface Tracing {
  readonly tracer: Tracer;
  /** Runs fn inside a new active span and ends it; a throw records the exception, `error.type` and an error status. */
  span<T>(name: string, options: SpanOptions, fn: (span: Span) => Promise<T> | T): Promise<T>;
  /** The W3C trace context of the active span as a run stores it: `<traceparent>[ <tracestate>]`; null without a span. */
  currentContext(): string | null;
  /** The context a stored (or incoming) trace context stands for; ROOT_CONTEXT when absent or malformed. */
  contextOf(traceparent: string | null | undefined, tracestate?: string | null): Context;
  /** Exports the spans still buffered and stops the exporter (runtime.close()). */
  shutdown(): Promise<void>;
}

/** The span attributes of our own (a `mercato.` namespace, beside the OpenTelemetry semantic conventions). */
export const ATTR = {
  runId: 'mercato.run.id',
  flow: 'mercato.flow',
  app: 'mercato.app',
  shop: 'mercato.shop',
  step: 'mercato.step',
  attempt: 'mercato.attempt',
  trigger: 'mercato.trigger',
  outcome: 'mercato.outcome',
} as const;

/** `mercato.shop` only when there is a shop (a global run has none). */
export function tenantAttributes(about: { runId?: string; flow?: string; app?: string | null; shop?: string | null }): Attributes {
  const a: Attributes = {};
  if (about.runId) a[ATTR.runId] = about.runId;
  if (about.flow) a[ATTR.flow] = about.flow;
  if (about.app) a[ATTR.app] = about.app;
  if (about.shop) a[ATTR.shop] = about.shop;
  return a;
}

/** The endpoint traces go to, from the standard variables; undefined when tracing is off. */
export function tracesEndpoint(env: NodeJS.ProcessEnv): string | undefined {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return undefined;
  if ((env.OTEL_TRACES_EXPORTER ?? '').trim().toLowerCase() === 'none') return undefined;
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!base) return undefined;
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}

/** `key1=value1,key2=value2` (values percent-encoded), as OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES are written. */
export function parseKeyValues(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (raw ?? '').split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (!key) continue;
    try {
      out[key] = decodeURIComponent(value);
    } catch {
      out[key] = value;
    }
  }
  return out;
}

/** The SDK's modules tracing needs, imported once, when the first runtime with tracing on is made. */
async function loadSdk() {
  const [hooks, core, exporter, resources, sdk, conventions] = await Promise.all([
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/semantic-conventions'),
  ]);
  return { hooks, core, exporter, resources, sdk, conventions };
}
type Sdk = Awaited<ReturnType<typeof loadSdk>>;
let sdkLoading: Promise<Sdk> | undefined;
const sdkOnce = () => (sdkLoading ??= loadSdk());

/** OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG (default parentbased_always_on). */
export async function samplerOf(env: NodeJS.ProcessEnv): Promise<Sampler> {
  const { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler } = (await sdkOnce()).sdk;
  const name = (env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on').trim().toLowerCase();
  const arg = Number(env.OTEL_TRACES_SAMPLER_ARG);
  const ratio = Number.isFinite(arg) && arg >= 0 && arg <= 1 ? arg : 1;
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

let contextManagerSet = false;

/** The async context manager that carries the active span across awaits: set once per process, never removed. */
function ensureContextManager({ hooks }: Sdk) {
  if (contextManagerSet) return;
  contextManagerSet = true;
  context.setGlobalContextManager(new hooks.AsyncLocalStorageContextManager().enable());
}

export interface CreateTracingOptions {
  /** The process role (`start`, `worker`, `dev`…): the default service name is `mercato-<role>`. */
  role: string;
  version: string;
}

/** The tracing of a runtime, or undefined when no OTLP endpoint is configured (no provider, no exporter, no SDK loaded). */
export async function createTracing(env: NodeJS.ProcessEnv, options: CreateTracingOptions): Promise<Tracing | undefined> {
  const url = tracesEndpoint(env);
  if (!url) return undefined;
  const sdk = await sdkOnce();
  ensureContextManager(sdk);
  const { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } = sdk.conventions;
  const propagator = new sdk.core.W3CTraceContextPropagator();
  const headers = {
    ...parseKeyValues(env.OTEL_EXPORTER_OTLP_HEADERS),
    ...parseKeyValues(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS),
  };
  const resourceAttributes = parseKeyValues(env.OTEL_RESOURCE_ATTRIBUTES);
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || resourceAttributes[ATTR_SERVICE_NAME] || `mercato-${options.role}`;
  const provider = new sdk.sdk.NodeTracerProvider({
    resource: sdk.resources.resourceFromAttributes({
      ...resourceAttributes,
      [ATTR_SERVICE_NAME]: serviceName,
      [ATTR_SERVICE_VERSION]: options.version,
      'mercato.process.role': options.role,
    }),
    sampler: await samplerOf(env),
    spanProcessors: [new sdk.sdk.BatchSpanProcessor(new sdk.exporter.OTLPTraceExporter({ url, headers }))],
  });
  const tracer = provider.getTracer('mercato', options.version);
  let shutdown: Promise<void> | undefined;
  return {
    tracer,
    span(name, o, fn) {
      return tracer.startActiveSpan(
        name,
        { kind: o.kind ?? SpanKind.INTERNAL, attributes: o.attributes, links: o.links },
        o.parent ?? context.active(),
        async (span) => {
          try {
            return await fn(span);
          } catch (error) {
            recordError(span, error);
            throw error;
          } finally {
            span.end();
          }
        },
      );
    },
    currentContext() {
      const carrier: Record<string, string> = {};
      propagator.inject(context.active(), carrier, defaultTextMapSetter);
      if (!carrier.traceparent) return null;
      return carrier.tracestate ? `${carrier.traceparent} ${carrier.tracestate}` : carrier.traceparent;
    },
    contextOf(traceparent, tracestate) {
      if (!traceparent) return ROOT_CONTEXT;
      let parent = traceparent.trim();
      let state = tracestate ?? undefined;
      const space = parent.indexOf(' ');
      if (space > 0 && state === undefined) {
        state = parent.slice(space + 1);
        parent = parent.slice(0, space);
      }
      const carrier: Record<string, string> = { traceparent: parent };
      if (state) carrier.tracestate = state;
      return propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
    },
    shutdown() {
      shutdown ??= provider.shutdown().catch(() => {});
      return shutdown;
    },
  };
}

/** Marks a span failed: the exception event, `error.type` (the error's name) and an error status. */
export function recordError(span: Span, error: unknown) {
  const e = error instanceof Error ? error : new Error(String(error));
  span.recordException(e);
  span.setAttribute('error.type', e.name || 'Error');
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
}

/** The active span (for events and attributes on it), or undefined. */
export function activeSpan(): Span | undefined {
  return trace.getSpan(context.active());
}

/** The trace id of the active span (events carry it: a log line leads to its trace), or null without tracing. */
export function activeTraceId(): string | null {
  const span = trace.getSpan(context.active());
  return span ? span.spanContext().traceId : null;
}
