/** The tracing configuration read from the standard OTEL_* variables: when tracing is on, the endpoint, headers, sampler. */
import { describe, expect, it } from 'vitest';
import { createTracing, parseKeyValues, samplerOf, tracesEndpoint } from '../../src/telemetry/tracing.ts';
import { startOtlpReceiver } from './receiver.ts';

describe('tracing configuration', () => {
  it('is on only with an OTLP endpoint, and off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none', async () => {
    expect(tracesEndpoint({})).toBeUndefined();
    expect(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBeUndefined();
    expect(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toBe('http://c:4318/v1/traces');
    expect(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/base//' })).toBe('http://c:4318/base/v1/traces');
    // the traces endpoint is used as it is, and beats the base one
    expect(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t:1/x' })).toBe(
      'http://t:1/x',
    );
    expect(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'TRUE' })).toBeUndefined();
    expect(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'false' })).toBe('http://c:4318/v1/traces');
    expect(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
    expect(await createTracing({}, { role: 'test', version: '0' })).toBeUndefined();
  });

  it('reads key=value lists with percent-encoded values and skips malformed entries', () => {
    expect(parseKeyValues('a=1, b = x%20y ,=z,novalue,c=%E0%A4%A')).toEqual({ a: '1', b: 'x y', c: '%E0%A4%A' });
    expect(parseKeyValues(undefined)).toEqual({});
  });

  it('builds the sampler of OTEL_TRACES_SAMPLER (default parentbased_always_on)', async () => {
    expect((await samplerOf({})).toString()).toMatch(/ParentBased\{root=AlwaysOnSampler/);
    expect((await samplerOf({ OTEL_TRACES_SAMPLER: 'always_off' })).toString()).toBe('AlwaysOffSampler');
    expect((await samplerOf({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' })).toString()).toBe(
      'TraceIdRatioBased{0.25}',
    );
    expect((await samplerOf({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '7' })).toString()).toMatch(
      /root=TraceIdRatioBased\{1\}/,
    );
  });

  it('a tracing stores and reads back the W3C trace context of its active span', async () => {
    const receiver = await startOtlpReceiver();
    const tracing = (await createTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }, { role: 'test', version: '0' }))!;
    try {
      const parent = tracing.contextOf('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'vendor=abc');
      const stored = await tracing.span('x', { parent }, () => tracing.currentContext());
      expect(stored).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-(?!00f067aa0ba902b7)[0-9a-f]{16}-01 vendor=abc$/);
      const child = await tracing.span('y', { parent: tracing.contextOf(stored) }, (span) => span.spanContext());
      expect(child.traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
      expect(child.traceState?.get('vendor')).toBe('abc');
      // malformed or absent: a new trace
      expect(await tracing.span('z', { parent: tracing.contextOf('garbage') }, (span) => span.spanContext().traceId)).not.toBe(
        '4bf92f3577b34da6a3ce929d0e0e4736',
      );
      expect(tracing.currentContext()).toBeNull();
      await tracing.shutdown(); // exports what is buffered
      expect(receiver.spans.map((s) => s.name).sort()).toEqual(['x', 'y', 'z']);
      expect(receiver.spans.find((s) => s.name === 'y')?.parentSpanId).toBe(stored!.slice(36, 52));
    } finally {
      await tracing.shutdown();
      await receiver.close();
    }
  });
});
