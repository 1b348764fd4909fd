/**
 * The lingering close (http/server.ts lingerThenClose): an answer sent while the client is still sending its body
 * (an early 413, a refusal before the body, a handler that never reads it) must reach a client that keeps writing.
 * Before it, Node destroyed the socket as soon as the answer was written, the kernel reset the connection on the
 * client's next segment, and Node's fetch (the official MCP SDK's transport) failed with EPIPE instead of the 413; CI
 * saw it at /mcp. A raw socket makes this deterministic: it keeps writing for a while after the answer and must see
 * no reset, the whole answer, then the server's FIN.
 */
import { connect } from 'node:net';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyLimitOf } from '../../src/http/body.ts';
import { createErrorHandler } from '../../src/http/errors.ts';
import { LINGER_MS, type StartedHttpServer, startHttpServer } from '../../src/http/server.ts';
import { capturingLogger } from '../http/helpers.ts';

const LIMIT = 100_000;

interface Exchange {
  answer: string;
  /** The client's socket error while it was still writing, if any (EPIPE / ECONNRESET before the fix). */
  error?: string;
  /** Whether the server closed its side (FIN) while the client went on writing. */
  sawEnd: boolean;
  /** Bytes the client wrote after the first byte of the answer arrived. */
  writtenAfterAnswer: number;
}

/** Sends `head`, then chunks of the body for `writeMs` (chunked framing when `chunked`), while collecting the answer. */
function exchange(port: number, head: string, options: { chunked: boolean; writeMs: number }): Promise<Exchange> {
  return new Promise((resolve) => {
    // half-open, as an HTTP client mid-upload is: the server's FIN does not stop it writing
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    const result: Exchange = { answer: '', sawEnd: false, writtenAfterAnswer: 0 };
    const payload = Buffer.alloc(16 * 1024, 0x20);
    const chunk = options.chunked
      ? Buffer.concat([Buffer.from(`${payload.length.toString(16)}\r\n`), payload, Buffer.from('\r\n')])
      : payload;
    let answered = false;
    let timer: NodeJS.Timeout | undefined;
    let stopAt = Infinity;
    const finish = () => {
      clearInterval(timer);
      socket.destroy();
      resolve(result);
    };
    socket.on('data', (data) => {
      if (!answered) {
        answered = true;
        stopAt = Date.now() + options.writeMs;
      }
      result.answer += data.toString('latin1');
    });
    socket.on('end', () => {
      result.sawEnd = true;
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      result.error = error.code ?? error.message;
      finish();
    });
    socket.on('connect', () => {
      socket.write(head);
      timer = setInterval(() => {
        if (Date.now() >= stopAt || socket.destroyed) return finish();
        // keep the socket's buffer small: write only what the server has taken
        if (socket.writableLength > 256 * 1024) return;
        socket.write(chunk);
        if (answered) result.writtenAfterAnswer += chunk.length;
      }, 2);
    });
    setTimeout(finish, 10_000).unref();
  });
}

describe('lingering close of an answer sent before its body', () => {
  let server: StartedHttpServer;
  beforeAll(async () => {
    const app = new Hono();
    app.onError(createErrorHandler(capturingLogger().logger));
    app.post('/limited', bodyLimitOf(LIMIT), async (c) => c.json({ length: (await c.req.text()).length }));
    // refuses before reading a byte (as /webhooks does without a signature)
    app.post('/refused', (c) => c.json({ error: 'Missing signature' }, 401, { Connection: 'close' }));
    // reads part of a chunked body through the WHATWG stream and stops (as /mcp's counted read does)
    app.post('/partial', async (c) => {
      const reader = c.req.raw.body!.getReader();
      let size = 0;
      while (size <= LIMIT) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
      }
      reader.releaseLock();
      return c.json({ error: 'too large' }, 413, { Connection: 'close' });
    });
    server = await startHttpServer(app, { port: 0, hostname: '127.0.0.1' });
  });
  afterAll(async () => {
    await server?.close();
  });

  const chunkedHead = (path: string) =>
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
  const cases = [
    { name: 'a chunked body over the limit (counted as it streams)', head: chunkedHead('/limited'), chunked: true, status: 413 },
    {
      name: 'a Content-Length over the limit (refused before reading)',
      head: `POST /limited HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n`,
      chunked: false,
      status: 413,
    },
    { name: 'a refusal before the body (no byte read)', head: chunkedHead('/refused'), chunked: true, status: 401 },
    { name: 'a body read in part through the stream, then left', head: chunkedHead('/partial'), chunked: true, status: 413 },
  ];

  for (const c of cases) {
    it(`${c.name}: the client writes on for 800 ms without a reset, reads the whole answer, then sees the FIN`, async () => {
      const result = await exchange(server.port, c.head, { chunked: c.chunked, writeMs: Math.min(800, LINGER_MS / 2) });
      expect(result.error).toBeUndefined();
      expect(result.answer.startsWith(`HTTP/1.1 ${c.status} `), result.answer.slice(0, 80)).toBe(true);
      expect(result.answer.toLowerCase()).toContain('connection: close');
      expect(result.answer).toMatch(/\r\n\r\n\{"error":"[^"]+"\}$/);
      expect(result.writtenAfterAnswer).toBeGreaterThan(0);
      expect(result.sawEnd).toBe(true);
    });
  }

  it('the connection is dropped after the linger even if the client never stops sending', async () => {
    const started = Date.now();
    const result = await exchange(server.port, chunkedHead('/limited'), { chunked: true, writeMs: LINGER_MS + 3000 });
    expect(result.answer.startsWith('HTTP/1.1 413 ')).toBe(true);
    expect(result.error).toMatch(/EPIPE|ECONNRESET/);
    expect(Date.now() - started).toBeLessThan(LINGER_MS + 2500);
    expect(Date.now() - started).toBeGreaterThanOrEqual(LINGER_MS - 100);
  });
});
