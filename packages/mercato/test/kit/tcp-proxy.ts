/**
 * A loopback TCP proxy in front of a database server, for tests of what a process does when its connections drop:
 * `cut()` destroys every open connection and refuses new ones (a real network failure seen by the client: reset sockets,
 * refused connects), `resume()` lets connections in again. Nothing in the client is replaced or patched.
 */
import { type Server, type Socket, connect, createServer } from 'node:net';

export interface TcpProxy {
  /** The proxy's port on 127.0.0.1. */
  port: number;
  /** `url` with its host and port replaced by the proxy's. */
  urlFor(url: string): string;
  /** Drop every open connection and refuse new ones until `resume()`. */
  cut(): void;
  resume(): void;
  /** Connections accepted since the start (a reconnect shows as a new one). */
  readonly accepted: number;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let refusing = false;
  let accepted = 0;
  const server: Server = createServer((client) => {
    if (refusing) {
      client.resetAndDestroy();
      return;
    }
    accepted++;
    const upstream = connect(target.port, target.host);
    open.add(client).add(upstream);
    const drop = () => {
      open.delete(client);
      open.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    urlFor(url) {
      return Object.assign(new URL(url), { hostname: '127.0.0.1', port: String(port) }).toString();
    },
    cut() {
      refusing = true;
      for (const socket of open) socket.resetAndDestroy();
      open.clear();
    },
    resume() {
      refusing = false;
    },
    get accepted() {
      return accepted;
    },
    async close() {
      for (const socket of open) socket.destroy();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}
