// The kubelet stand-in's way to the API server: JSON over HTTPS with the
// cluster's CA and admin credentials, and watches read line by line.

import { request } from 'node:https';
import type { IncomingMessage } from 'node:http';

/** What the kubelet needs of a cluster: where it is, its CA, and admin credentials. */
export interface ClusterAccess {
  readonly server: string;
  readonly ca: string;
  /** A client certificate and key (PEM), or a bearer token. */
  readonly cert?: string;
  readonly key?: string;
  readonly token?: string;
}

export interface Response {
  readonly status: number;
  readonly body: any;
}

export interface WatchEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  readonly object: any;
}

const REQUEST_TIMEOUT_MS = 15_000;

export class Api {
  readonly #access: ClusterAccess;

  constructor(access: ClusterAccess) {
    this.#access = access;
  }

  get server(): string {
    return this.#access.server;
  }

  get ca(): string {
    return this.#access.ca;
  }

  call(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<Response> {
    return new Promise((resolve, reject) => {
      const text = body === undefined ? undefined : JSON.stringify(body);
      const req = this.#request(method, path, text === undefined ? {} : { 'content-type': contentType, 'content-length': String(Buffer.byteLength(text)) }, (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (data += c));
        res.on('end', () => {
          let parsed: unknown = data;
          try {
            parsed = data ? JSON.parse(data) : undefined;
          } catch {
            // Not JSON (a plain-text error): keep the text.
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
        res.on('error', reject);
      });
      req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`${method} ${path}: no answer in ${REQUEST_TIMEOUT_MS} ms`)));
      req.on('error', reject);
      req.end(text);
    });
  }

  /** Like `call`, but a status outside 2xx is an error naming the request. */
  async must(method: string, path: string, body?: unknown, contentType?: string): Promise<any> {
    const r = await this.call(method, path, body, contentType);
    if (r.status < 200 || r.status > 299) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body?.message ?? r.body)}`);
    return r.body;
  }

  /**
   * A watch from `resourceVersion`: calls `onEvent` for each event, resolves when
   * the server ends the stream (the caller re-lists or re-watches).
   */
  watch(path: string, resourceVersion: string, onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void> {
    const sep = path.includes('?') ? '&' : '?';
    const url = `${path}${sep}watch=true&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(resourceVersion)}`;
    return new Promise((resolve) => {
      const req = this.#request('GET', url, {}, (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          res.on('end', resolve);
          return;
        }
        let partial = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const lines = (partial + chunk).split('\n');
          partial = lines.pop()!;
          for (const line of lines) if (line.trim()) onEvent(JSON.parse(line) as WatchEvent);
        });
        res.on('end', resolve);
        res.on('error', () => resolve());
      });
      req.on('error', () => resolve());
      signal.addEventListener('abort', () => req.destroy(), { once: true });
      req.end();
    });
  }

  #request(method: string, path: string, headers: Record<string, string>, onResponse: (res: IncomingMessage) => void) {
    const a = this.#access;
    return request(
      `${a.server}${path}`,
      {
        method,
        ca: a.ca,
        cert: a.cert,
        key: a.key,
        headers: { accept: 'application/json', ...(a.token && { authorization: `Bearer ${a.token}` }), ...headers },
        agent: false,
      },
      onResponse,
    );
  }
}
