// An "API server" that answers every request 404 with a Status and counts the
// requests that reached it: over plain http, or over https with a self-signed
// certificate for 127.0.0.1 (a request refused by TLS is not counted).

import { type IncomingMessage, type Server, type ServerResponse, createServer as createHttp } from 'node:http';
import { createServer as createHttps } from 'node:https';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { selfSigned } from './cluster/pki.ts';
import { tempDir } from './proc.ts';
import { within } from './wait.ts';

const NOT_FOUND = '{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}';

export interface NotFoundApi {
  readonly url: string;
  /** Over https, the server's certificate (PEM): the CA that trusts it; '' over http. */
  readonly ca: string;
  requests(): number;
  close(): void;
}

export async function notFoundApi(tls: boolean): Promise<NotFoundApi> {
  let requests = 0;
  const handler = (_req: IncomingMessage, res: ServerResponse) => {
    requests++;
    res.writeHead(404, { 'content-type': 'application/json' }).end(NOT_FOUND);
  };
  let server: Server;
  let ca = '';
  if (tls) {
    const { cert, key } = selfSigned(tempDir(), 'api', '/CN=api', 'IP:127.0.0.1');
    ca = readFileSync(cert, 'utf8');
    server = createHttps({ key: readFileSync(key), cert: ca }, handler);
  } else {
    server = createHttp(handler);
  }
  await within(5000, 'listen', new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve)));
  const url = `${tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, ca, requests: () => requests, close: () => server.close() };
}
