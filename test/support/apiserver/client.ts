// A bare HTTP client for tests that talk to the fake API server directly.

import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { FakeApiServer } from './server.ts';

export interface ApiResponse {
  readonly status: number;
  readonly body: any;
}

/** Sends one request as the holder of `token`; JSON bodies in and out. */
export function apiRequest(
  server: FakeApiServer,
  token: string | undefined,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<ApiResponse> {
  const text = body === undefined ? undefined : JSON.stringify(body);
  const request = server.tls ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      `${server.url}${path}`,
      {
        method,
        ca: server.ca,
        headers: {
          accept: 'application/json',
          ...(token && { authorization: `Bearer ${token}` }),
          ...(text !== undefined && { 'content-type': contentType, 'content-length': Buffer.byteLength(text) }),
        },
      },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (data += c));
        res.on('end', () => {
          let parsed: unknown = data;
          try {
            parsed = JSON.parse(data);
          } catch {}
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}
