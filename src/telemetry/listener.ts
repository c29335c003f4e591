// The HTTP listener: binds DRAINGUARD_HTTP_ADDR and reports the address it got
// (port 0 picks a free one), so that whoever reads the log can reach it.

import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError } from '../errors.ts';

export interface HttpAddr {
  readonly host: string;
  readonly port: number;
}

export interface HttpListener {
  /** HOST:PORT actually bound, [HOST]:PORT for IPv6. */
  readonly address: string;
  readonly port: number;
  /** Stops listening and closes every connection, also ones waiting on a drain. */
  close(): Promise<void>;
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export async function listenHttp(addr: HttpAddr, handler: Handler): Promise<HttpListener> {
  const server: Server = createServer(handler);
  // Slow or idle peers must not hold sockets open: the routes answer at once, except the preStop one.
  server.headersTimeout = 10_000;
  server.requestTimeout = 15_000;
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(addr.port, addr.host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((err: NodeJS.ErrnoException) => {
    const hint =
      err.code === 'EADDRINUSE'
        ? ' (address in use)'
        : err.code === 'EADDRNOTAVAIL'
          ? ' (no such local address)'
          : err.code === 'EACCES'
            ? ' (permission denied)'
            : '';
    throw new ConfigError(
      'DG_HTTP_LISTEN',
      `DRAINGUARD_HTTP_ADDR: cannot listen on ${format(addr.host, addr.port)}: ${err.code ?? err.message}${hint}`,
      { cause: err },
    );
  });
  server.on('error', () => {});
  const bound = server.address() as AddressInfo;
  return {
    address: format(bound.address, bound.port),
    port: bound.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function format(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
