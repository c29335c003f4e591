// A fault-injecting HTTPS proxy in front of the real API server, for what a
// real server cannot be made to do: 500s, dropped connections, hung requests,
// a 409 on the first write, a revoked token (401), the API unreachable.
// Everything not faulted is forwarded unchanged. It serves the cluster's own
// serving certificate (signed by the cluster CA, SAN 127.0.0.1), so a
// kubeconfig keeps the cluster's CA and only its server changes. Bearer
// tokens only: a client certificate ends at the proxy. See README.md.

import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, request } from 'node:https';
import type { Socket } from 'node:net';
import { onFileEnd } from '../file-end.ts';

/** What a rule can match on, and what the request log records. */
export interface ProxiedRequest {
  readonly method: string;
  /** Path without the query string. */
  readonly path: string;
  readonly query: URLSearchParams;
  /** Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection; the method in lower case elsewhere. */
  readonly verb: string;
  readonly resource?: string;
  readonly subresource?: string;
  readonly namespace?: string;
  readonly name?: string;
  /** The bearer token's subject (a ServiceAccount token's `system:serviceaccount:NS:NAME`). */
  readonly user?: string;
  readonly token?: string;
  readonly contentType?: string;
  /** The JSON body, parsed. */
  readonly body?: any;
}

export interface Recorded extends ProxiedRequest {
  /** The status sent back; 0 when the connection was dropped or the answer never came. */
  status: number;
  /** Whether a rule answered instead of the real server. */
  faulted: boolean;
  /** Answered, dropped, or given up by the client with nothing left to forward. */
  done: boolean;
  /** When the whole request had arrived (performance.now()). */
  readonly at: number;
  /** From `at` until it was done (one loopback hop more than the server's own time when forwarded). */
  durationMs?: number;
}

export interface Rule {
  /** An HTTP method, or several (default: any). */
  readonly method?: string | readonly string[];
  /** A pattern for the path (default: any). */
  readonly path?: RegExp;
  /** Anything else about the request. */
  readonly match?: (r: ProxiedRequest) => boolean;
  /** Only the first N matching requests (default: every one). */
  readonly times?: number;
  /** Answer with this status and a Kubernetes Status body. */
  readonly status?: number;
  readonly message?: string;
  /** Wait this long first (then answer with `status`, or forward). */
  readonly delayMs?: number;
  /** Never answer: the request hangs until the client gives up. */
  readonly hang?: boolean;
  /** Close the connection without an answer. */
  readonly drop?: boolean;
}

export interface RuleHandle {
  /** Requests it has hit so far. */
  readonly hits: number;
  remove(): void;
}

const REASONS: Record<number, string> = {
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** The bearer token's `sub`, when it is a JWT (as ServiceAccount tokens are). */
function subject(token: string | undefined): string | undefined {
  const payload = token?.split('.')[1];
  if (!payload) return undefined;
  try {
    return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')).sub;
  } catch {
    return undefined;
  }
}

/** Reads the resource parts of a Kubernetes API path. */
function describe(method: string, url: URL, headers: IncomingMessage['headers'], raw: Buffer): ProxiedRequest {
  const parts = url.pathname.split('/').filter(Boolean);
  const rest = parts[0] === 'api' ? parts.slice(2) : parts[0] === 'apis' ? parts.slice(3) : undefined;
  let namespace: string | undefined;
  let resource: string | undefined;
  let name: string | undefined;
  let subresource: string | undefined;
  if (rest) {
    let r = rest;
    if (r[0] === 'namespaces' && r.length >= 3) {
      namespace = r[1];
      r = r.slice(2);
    }
    [resource, name, subresource] = r;
    if (!resource && namespace) [resource, name] = ['namespaces', namespace];
  }
  const m = method.toLowerCase();
  const verb = !rest
    ? m
    : m === 'get'
      ? url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1'
        ? 'watch'
        : name
          ? 'get'
          : 'list'
      : m === 'post'
        ? 'create'
        : m === 'put'
          ? 'update'
          : m === 'delete' && !name
            ? 'deletecollection'
            : m;
  const token = /^Bearer (.+)$/i.exec(headers.authorization ?? '')?.[1];
  let body: any;
  if (raw.length > 0) {
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {}
  }
  return {
    method,
    path: url.pathname,
    query: url.searchParams,
    verb,
    resource,
    subresource,
    namespace,
    name,
    token,
    user: subject(token),
    contentType: headers['content-type'],
    body,
  };
}

export class FaultProxy extends EventEmitter {
  /** Every request, in order of arrival. */
  readonly requests: Recorded[] = [];
  readonly #target: URL;
  readonly #ca: Buffer;
  readonly #server;
  readonly #sockets = new Set<Socket>();
  readonly #rules: { rule: Rule; hits: number }[] = [];
  readonly #timers = new Set<NodeJS.Timeout>();
  #port = 0;

  constructor(options: { target: string; caFile: string; certFile: string; keyFile: string }) {
    super();
    this.setMaxListeners(0);
    this.#target = new URL(options.target);
    this.#ca = readFileSync(options.caFile);
    this.#server = createServer({ cert: readFileSync(options.certFile), key: readFileSync(options.keyFile) }, (req, res) =>
      this.#handle(req, res),
    );
    this.#server.on('connection', (s: Socket) => {
      this.#sockets.add(s);
      s.once('close', () => this.#sockets.delete(s));
    });
  }

  get url(): string {
    return `https://127.0.0.1:${this.#port}`;
  }

  async listen(port = 0): Promise<void> {
    await new Promise<void>((resolve, reject) => this.#server.once('error', reject).listen(port, '127.0.0.1', () => resolve()));
    this.#port = (this.#server.address() as { port: number }).port;
  }

  /** Adds a fault; rules are tried in the order they were added. */
  rule(rule: Rule): RuleHandle {
    const entry = { rule, hits: 0 };
    this.#rules.push(entry);
    return {
      get hits() {
        return entry.hits;
      },
      remove: () => {
        const i = this.#rules.indexOf(entry);
        if (i >= 0) this.#rules.splice(i, 1);
      },
    };
  }

  /** Removes every rule. */
  clear(): void {
    this.#rules.length = 0;
  }

  /** The API unreachable: the port is closed and every open connection cut. */
  async down(): Promise<void> {
    const closed = new Promise((resolve) => this.#server.close(resolve));
    for (const s of this.#sockets) s.destroy();
    await closed;
  }

  /** Back on the same port. */
  up(): Promise<void> {
    return this.listen(this.#port);
  }

  close(): Promise<void> {
    this.clear();
    for (const t of this.#timers) clearTimeout(t);
    return this.#server.listening ? this.down() : Promise.resolve();
  }

  #match(r: ProxiedRequest): Rule | undefined {
    for (const entry of this.#rules) {
      const { rule } = entry;
      const methods = rule.method === undefined ? undefined : typeof rule.method === 'string' ? [rule.method] : rule.method;
      if (methods && !methods.includes(r.method)) continue;
      if (rule.path && !rule.path.test(r.path)) continue;
      if (rule.match && !rule.match(r)) continue;
      if (rule.times !== undefined && entry.hits >= rule.times) continue;
      entry.hits++;
      return rule;
    }
    return undefined;
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const info = describe(req.method ?? 'GET', new URL(req.url ?? '/', 'https://proxy'), req.headers, raw);
      const recorded: Recorded = { ...info, status: 0, faulted: false, done: false, at: performance.now() };
      this.requests.push(recorded);
      const rule = this.#match(info);
      const finish = () => {
        if (recorded.done) return;
        recorded.done = true;
        recorded.durationMs = Math.round((performance.now() - recorded.at) * 10) / 10;
        this.emit('request', recorded);
      };
      res.once('finish', finish);
      // A delayed request whose client gave up is still sent on when its time comes: a write that lands late.
      res.once('close', () => (rule?.delayMs && !rule.status ? undefined : finish()));
      const act = () => {
        if (rule?.drop) {
          req.socket.destroy();
          return;
        }
        if (res.destroyed && (rule?.status || !rule?.delayMs)) return;
        if (rule?.status) {
          recorded.status = rule.status;
          recorded.faulted = true;
          const reason = REASONS[rule.status] ?? 'InternalError';
          res.writeHead(rule.status, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              kind: 'Status',
              apiVersion: 'v1',
              metadata: {},
              status: 'Failure',
              message: rule.message ?? `injected ${rule.status}`,
              reason,
              code: rule.status,
            }),
          );
          return;
        }
        this.#forward(req, res, raw, recorded, finish);
      };
      if (rule?.hang) return;
      if (rule?.delayMs) {
        const timer = setTimeout(act, rule.delayMs);
        this.#timers.add(timer);
        if (rule.status) res.once('close', () => clearTimeout(timer));
      } else act();
    });
  }

  #forward(req: IncomingMessage, res: ServerResponse, raw: Buffer, recorded: Recorded, finish: () => void): void {
    const headers = { ...req.headers, host: this.#target.host };
    const upstream = request(
      {
        protocol: 'https:',
        hostname: this.#target.hostname,
        port: this.#target.port,
        path: req.url,
        method: req.method,
        headers,
        ca: this.#ca,
      },
      (up) => {
        recorded.status = up.statusCode ?? 0;
        if (res.destroyed) {
          // The client is gone (a late write): the server's answer goes nowhere.
          up.resume();
          up.once('end', finish);
          return;
        }
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    // The real server unreachable or gone mid-answer: the client sees the connection end.
    upstream.on('error', () => {
      req.socket.destroy();
      finish();
    });
    // A watch ends when its client goes; anything else is left to land.
    if (recorded.verb === 'watch') res.once('close', () => upstream.destroy());
    upstream.end(raw);
  }
}

/** A proxy in front of `cluster` (its URL, CA and serving certificate), listening on a free port; closed at the end of the file at the latest. */
export async function startFaultProxy(cluster: {
  url: string;
  state: { caFile: string; servingCert: string; servingKey: string };
}): Promise<FaultProxy> {
  const proxy = new FaultProxy({
    target: cluster.url,
    caFile: cluster.state.caFile,
    certFile: cluster.state.servingCert,
    keyFile: cluster.state.servingKey,
  });
  await proxy.listen();
  onFileEnd(() => proxy.close());
  return proxy;
}
