// A small JSON client for the real API server, as the cluster admin (client
// certificate, O=system:masters) or as any bearer token.

import { readFileSync } from 'node:fs';
import { request } from 'node:https';

export interface ApiResponse {
  readonly status: number;
  readonly body: any;
}

export interface Credentials {
  readonly ca: string | Buffer;
  readonly cert?: string | Buffer;
  readonly key?: string | Buffer;
  readonly token?: string;
}

export class ApiCallError extends Error {
  readonly status: number;
  readonly body: any;
  constructor(method: string, path: string, response: ApiResponse) {
    super(`${method} ${path}: ${response.status} ${typeof response.body === 'object' ? response.body?.message : response.body}`);
    this.status = response.status;
    this.body = response.body;
  }
}

/** The watch events of one watch request. */
export interface WatchEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  readonly object: any;
}

export class Api {
  readonly url: string;
  readonly #credentials: Credentials;

  constructor(url: string, credentials: Credentials) {
    this.url = url;
    this.#credentials = credentials;
  }

  static admin(state: { url: string; caFile: string; adminCert: string; adminKey: string }): Api {
    return new Api(state.url, { ca: readFileSync(state.caFile), cert: readFileSync(state.adminCert), key: readFileSync(state.adminKey) });
  }

  /** The same server as the holder of `token`. */
  as(token: string): Api {
    return new Api(this.url, { ca: this.#credentials.ca, token });
  }

  /** One request; any status is answered, a connection error rejects. */
  request(method: string, path: string, body?: unknown, contentType = 'application/json', timeoutMs = 30_000): Promise<ApiResponse> {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const { ca, cert, key, token } = this.#credentials;
    return new Promise((resolve, reject) => {
      const req = request(
        `${this.url}${path}`,
        {
          method,
          ca,
          cert,
          key,
          timeout: timeoutMs,
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
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(text);
    });
  }

  async #ok(method: string, path: string, body?: unknown, contentType?: string): Promise<any> {
    const r = await this.request(method, path, body, contentType);
    if (r.status >= 300) throw new ApiCallError(method, path, r);
    return r.body;
  }

  /** The object, or undefined when it does not exist (404). */
  async get(path: string): Promise<any> {
    const r = await this.request('GET', path);
    if (r.status === 404) return undefined;
    if (r.status >= 300) throw new ApiCallError('GET', path, r);
    return r.body;
  }

  async list(path: string): Promise<any[]> {
    return (await this.#ok('GET', path)).items;
  }

  create(path: string, body: unknown): Promise<any> {
    return this.#ok('POST', path, body);
  }

  /** A merge patch unless another content type is given. */
  patch(path: string, body: unknown, contentType = 'application/merge-patch+json'): Promise<any> {
    return this.#ok('PATCH', path, body, contentType);
  }

  /** DELETE with these DeleteOptions; a 404 is fine (already gone). */
  async delete(path: string, options: Record<string, unknown> = {}): Promise<void> {
    const r = await this.request('DELETE', path, { apiVersion: 'v1', kind: 'DeleteOptions', ...options });
    if (r.status >= 300 && r.status !== 404) throw new ApiCallError('DELETE', path, r);
  }

  /** Watches a collection path (`?watch=1` is added); `onEvent` until the returned stop is called. */
  watch(path: string, onEvent: (e: WatchEvent) => void, onEnd: (err?: Error) => void = () => {}): () => void {
    const { ca, cert, key, token } = this.#credentials;
    const sep = path.includes('?') ? '&' : '?';
    const req = request(
      `${this.url}${path}${sep}watch=1`,
      { ca, cert, key, headers: { accept: 'application/json', ...(token && { authorization: `Bearer ${token}` }) } },
      (res) => {
        let partial = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const lines = (partial + chunk).split('\n');
          partial = lines.pop()!;
          for (const l of lines) if (l.trim()) onEvent(JSON.parse(l) as WatchEvent);
        });
        res.on('end', () => onEnd());
        res.on('error', (e) => onEnd(e));
      },
    );
    req.on('error', (e) => onEnd(e));
    req.end();
    return () => req.destroy();
  }
}
