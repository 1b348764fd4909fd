/**
 * A real OTLP/HTTP trace receiver for the tests: a node http server on 127.0.0.1:0 accepting `POST /v1/traces` with
 * the JSON encoding (what @opentelemetry/exporter-trace-otlp-http sends), flattening what it receives into spans.
 */
import { type IncomingMessage, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  service: string;
  resource: Record<string, unknown>;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP numbers: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
  /** 0 unset, 1 ok, 2 error. */
  status: { code: number; message?: string };
  links: Array<{ traceId: string; spanId: string }>;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** Every request that reached the server (any path). */
  requests: Array<{ method: string; path: string; contentType: string; headers: Record<string, string | string[] | undefined> }>;
  close(): Promise<void>;
}

const SPAN_KINDS: Record<string, number> = {
  SPAN_KIND_INTERNAL: 1,
  SPAN_KIND_SERVER: 2,
  SPAN_KIND_CLIENT: 3,
  SPAN_KIND_PRODUCER: 4,
  SPAN_KIND_CONSUMER: 5,
};

/** OTLP JSON ids are hex; base64 (the protobuf JSON mapping) is converted. */
function hexId(id: unknown): string {
  if (typeof id !== 'string' || id === '') return '';
  if (/^[0-9a-f]+$/i.test(id) && (id.length === 32 || id.length === 16)) return id.toLowerCase();
  return Buffer.from(id, 'base64').toString('hex');
}

function valueOf(v: any): unknown {
  if (!v || typeof v !== 'object') return undefined;
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return Number(v.doubleValue);
  if ('arrayValue' in v) return (v.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

function attributesOf(list: any[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const a of list ?? []) out[a.key] = valueOf(a.value);
  return out;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: OtlpReceiver['requests'] = [];
  const server = createServer(async (req, res) => {
    const contentType = String(req.headers['content-type'] ?? '');
    requests.push({ method: req.method ?? '', path: req.url ?? '', contentType, headers: req.headers });
    const text = await readBody(req);
    if (req.method !== 'POST' || req.url !== '/v1/traces' || !contentType.includes('application/json')) {
      res.writeHead(415, { 'content-type': 'application/json' }).end('{"error":"JSON OTLP traces only"}');
      return;
    }
    const body = JSON.parse(text);
    for (const rs of body.resourceSpans ?? []) {
      const resource = attributesOf(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          spans.push({
            service: String(resource['service.name']),
            resource,
            traceId: hexId(s.traceId),
            spanId: hexId(s.spanId),
            parentSpanId: hexId(s.parentSpanId),
            name: s.name,
            kind: typeof s.kind === 'number' ? s.kind : (SPAN_KINDS[s.kind] ?? 0),
            attributes: attributesOf(s.attributes),
            events: (s.events ?? []).map((e: any) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
            status: { code: s.status?.code ?? 0, message: s.status?.message },
            links: (s.links ?? []).map((l: any) => ({ traceId: hexId(l.traceId), spanId: hexId(l.spanId) })),
          });
        }
      }
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
