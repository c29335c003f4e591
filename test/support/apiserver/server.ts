// A Kubernetes API server for tests: real HTTP(S) on 127.0.0.1 port 0, behaving
// as ../../../../shared/kubernetes-facts.md records a real one does. See README.md.

import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse, createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Server, Socket } from 'node:net';
import { join } from 'node:path';
import { ApiError, qualified } from './errors.ts';
import { applyPatch } from './patch.ts';
import { type Attributes, type RbacView, type UserInfo, authorize, formatRule, isSuperuser, onlyGcFieldsChanged, rulesFor, uncovered } from './rbac.ts';
import { type ResourceType, VERBS, apiVersionOf } from './resources.ts';
import { fieldSelector, labelSelector } from './selectors.ts';
import { type Change, type Clock, type DeleteOptions, type KubeObject, Store } from './store.ts';

const HERE = import.meta.dirname;
export const TLS_CERT = readFileSync(join(HERE, 'tls-cert.pem'), 'utf8');
const TLS_KEY = readFileSync(join(HERE, 'tls-key.pem'), 'utf8');
const MAX_BODY = 3 * 1024 * 1024;
/** Tokens of a deleted ServiceAccount (or Pod, for bound tokens) stop working this long after its deletionTimestamp. */
export const TOKEN_LEEWAY_MS = 60_000;

/** A clock that runs with real time but can be moved forward. */
export class FakeClock implements Clock {
  #offset = 0;
  now(): number {
    return Date.now() + this.#offset;
  }
  advance(ms: number): void {
    this.#offset += ms;
  }
}

/** What the server knows about a request once its path is parsed. */
export interface RequestInfo {
  readonly method: string;
  /** Path without the query string. */
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  /** Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection; or the method for non-resource paths. */
  readonly verb: string;
  readonly apiGroup?: string;
  readonly apiVersion?: string;
  readonly resource?: string;
  readonly subresource?: string;
  readonly namespace?: string;
  readonly name?: string;
  /** Authenticated user name, once known. */
  readonly user?: string;
  readonly contentType?: string;
  /** Parsed JSON body (undefined when none or not JSON). */
  readonly body?: any;
}

export interface RecordedRequest extends RequestInfo {
  /** HTTP status sent; 0 when the connection was dropped without an answer. */
  readonly status: number;
  readonly durationMs: number;
  /** Epoch ms (server clock) when the request arrived. */
  readonly at: number;
}

export interface Fault {
  /** Which requests it hits (default: all). */
  readonly match?: (req: RequestInfo) => boolean;
  /** How many requests it hits (default: unlimited). */
  readonly times?: number;
  /** Answer with this status and a Status body instead of serving the request. */
  readonly status?: number;
  readonly message?: string;
  /** Wait this long before answering (or before serving, when no status is given). */
  readonly delayMs?: number;
  /** Close the connection without an answer. */
  readonly drop?: boolean;
}

export interface FaultHandle {
  /** Requests it has hit so far. */
  readonly hits: number;
  remove(): void;
}

export interface ApiServerOptions {
  /** Serve HTTPS with the test certificate (default true); false serves plain HTTP. */
  readonly tls?: boolean;
  readonly clock?: FakeClock;
  /** Delay of the garbage collector and the namespace and CRD controllers (default 20 ms; real: ~0.1 s). */
  readonly controllerDelayMs?: number;
  /**
   * How long a deleted role or binding keeps granting (the authorizer's cache).
   * Default 100 ms, the low end of the 0.1–0.2 s measured; 0 makes it strict.
   */
  readonly authorizerLagMs?: number;
  /** Namespaces that exist from the start (default: default, kube-system). */
  readonly namespaces?: readonly string[];
}

interface Token {
  readonly user: UserInfo;
  readonly serviceAccount?: { namespace: string; name: string; uid: string };
  readonly pod?: { namespace: string; name: string; uid: string };
}

interface ActiveFault {
  fault: Fault;
  hits: number;
  removed: boolean;
}

const json = (res: ServerResponse, status: number, body: unknown): void => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
};

/** The fake API server. Start it with `startApiServer()`. */
export class FakeApiServer extends EventEmitter<{ request: [RecordedRequest] }> {
  readonly clock: FakeClock;
  readonly store: Store;
  /** Every request answered (or dropped), in order of completion. */
  readonly requests: RecordedRequest[] = [];
  /** A token of a cluster admin (group system:masters), for test setup. */
  readonly adminToken: string;
  readonly tls: boolean;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #tokens = new Map<string, Token>();
  readonly #faults: ActiveFault[] = [];
  readonly #authorizerLagMs: number;
  readonly #ghosts: { type: string; object: KubeObject; until: number }[] = [];
  #port = 0;

  constructor(options: ApiServerOptions = {}) {
    super();
    this.setMaxListeners(0);
    this.tls = options.tls ?? true;
    this.clock = options.clock ?? new FakeClock();
    this.store = new Store({ clock: this.clock, controllerDelayMs: options.controllerDelayMs });
    this.#authorizerLagMs = options.authorizerLagMs ?? 100;
    this.adminToken = this.tokenForUser('admin', ['system:masters']);
    const handler = (req: IncomingMessage, res: ServerResponse) => void this.#handle(req, res);
    this.#server = this.tls ? createHttpsServer({ cert: TLS_CERT, key: TLS_KEY }, handler) : createHttpServer(handler);
    this.#server.on(this.tls ? 'secureConnection' : 'connection', (socket: Socket) => {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
    const nsType = this.type('v1', 'namespaces');
    for (const ns of options.namespaces ?? ['default', 'kube-system']) this.store.create(nsType, undefined, { metadata: { name: ns } });
    this.store.on('change', (c) => this.#remember(c));
  }

  get port(): number {
    return this.#port;
  }

  get url(): string {
    return `${this.tls ? 'https' : 'http'}://127.0.0.1:${this.#port}`;
  }

  /** The CA certificate (PEM) that verifies the server, for kubeconfigs. */
  get ca(): string {
    return TLS_CERT;
  }

  async listen(port = 0): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, '127.0.0.1', () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    this.#port = (this.#server.address() as { port: number }).port;
  }

  /** The API goes down: the port is closed and open connections are cut. `listenAgain()` brings it back on the same port. */
  async stopListening(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const s of this.#sockets) s.destroy();
    await closed;
  }

  listenAgain(): Promise<void> {
    return this.listen(this.#port);
  }

  async close(): Promise<void> {
    this.store.stop();
    if (this.#server.listening) await this.stopListening();
  }

  // ---- identities -------------------------------------------------------

  /** A bearer token for a user with these groups (system:authenticated is added). */
  tokenForUser(name: string, groups: readonly string[] = []): string {
    const token = `user-${randomBytes(16).toString('hex')}`;
    this.#tokens.set(token, { user: { name, groups: [...groups, 'system:authenticated'] } });
    return token;
  }

  /**
   * A token of an existing ServiceAccount, like a projected service account token.
   * With `pod`, the token is bound to that Pod as well (kubectl create token --bound-object-kind Pod).
   */
  tokenFor(namespace: string, name: string, options: { pod?: string } = {}): string {
    const sa = this.store.mustGet(this.type('v1', 'serviceaccounts'), namespace, name);
    const pod = options.pod === undefined ? undefined : this.store.mustGet(this.type('v1', 'pods'), namespace, options.pod);
    const token = `sa-${randomBytes(16).toString('hex')}`;
    this.#tokens.set(token, {
      user: { name: `system:serviceaccount:${namespace}:${name}`, groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'] },
      serviceAccount: { namespace, name, uid: sa.metadata.uid },
      ...(pod && { pod: { namespace, name: pod.metadata.name, uid: pod.metadata.uid } }),
    });
    return token;
  }

  #authenticate(header: string | undefined): UserInfo | undefined {
    const m = /^Bearer\s+(\S+)$/i.exec(header ?? '');
    const token = m ? this.#tokens.get(m[1]!) : undefined;
    if (!token) return undefined;
    const alive = (resource: string, ref?: { namespace: string; name: string; uid: string }) => {
      if (!ref) return true;
      const obj = this.store.get(this.type('v1', resource), ref.namespace, ref.name);
      if (!obj || obj.metadata.uid !== ref.uid) return false;
      const deleting = obj.metadata.deletionTimestamp;
      return !deleting || this.clock.now() < Date.parse(deleting) + TOKEN_LEEWAY_MS;
    };
    return alive('serviceaccounts', token.serviceAccount) && alive('pods', token.pod) ? token.user : undefined;
  }

  // ---- faults and observation --------------------------------------------

  /** Makes matching requests fail, wait, or drop their connection. */
  fault(fault: Fault): FaultHandle {
    const active: ActiveFault = { fault, hits: 0, removed: false };
    this.#faults.push(active);
    return {
      get hits() {
        return active.hits;
      },
      remove: () => {
        active.removed = true;
      },
    };
  }

  /** The recorded requests that match (for assertions on the API calls made). */
  requestsMatching(match: (r: RecordedRequest) => boolean): RecordedRequest[] {
    return this.requests.filter(match);
  }

  /** Resolves once `predicate` (checked after every request and store change) returns a value; rejects after `ms`. */
  waitFor<T>(predicate: () => T | undefined | false, ms: number, what: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const check = () => {
        let value: T | undefined | false;
        try {
          value = predicate();
        } catch (err) {
          done();
          reject(err);
          return;
        }
        if (value !== undefined && value !== false) {
          done();
          resolve(value);
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${ms} ms waiting for ${what}`));
      }, ms);
      const done = () => {
        clearTimeout(timer);
        this.off('request', check);
        this.store.off('change', check);
      };
      this.on('request', check);
      this.store.on('change', check);
      check();
    });
  }

  // ---- test conveniences (as the cluster admin, straight to the store) ----

  /** The served type for an apiVersion and resource ("v1", "pods"; "rbac.authorization.k8s.io/v1", "clusterroles"). */
  type(apiVersion: string, resource: string): ResourceType {
    const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
    const type = this.store.types.find(group!, version!, resource);
    if (!type) throw new Error(`the test API server does not serve ${apiVersion} ${resource}`);
    return type;
  }

  #typeOfObject(obj: KubeObject): ResourceType {
    const type = this.store.types.byKind(obj.apiVersion, obj.kind);
    if (!type) throw new Error(`the test API server does not serve ${obj.apiVersion} ${obj.kind}`);
    return type;
  }

  /** Creates an object given with apiVersion and kind; returns it as stored. */
  create(obj: KubeObject): KubeObject {
    return this.store.create(this.#typeOfObject(obj), obj.metadata?.namespace, obj);
  }

  get(apiVersion: string, resource: string, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.store.get(this.type(apiVersion, resource), namespace, name);
  }

  list(apiVersion: string, resource: string, namespace?: string): KubeObject[] {
    return this.store.list(this.type(apiVersion, resource), namespace);
  }

  delete(apiVersion: string, resource: string, namespace: string | undefined, name: string, options?: DeleteOptions): { object: KubeObject; gone: boolean } {
    return this.store.delete(this.type(apiVersion, resource), namespace, name, options);
  }

  /** Replaces an object's finalizers (as its controller would). */
  setFinalizers(apiVersion: string, resource: string, namespace: string | undefined, name: string, finalizers: string[]): KubeObject {
    const type = this.type(apiVersion, resource);
    const obj = this.store.mustGet(type, namespace, name);
    return this.store.update(type, namespace, name, { ...obj, metadata: { ...obj.metadata, finalizers } });
  }

  /** The kubelet reports a terminating Pod's containers stopped: the Pod goes once no finalizer holds it. */
  finishPodTermination(namespace: string, name: string): void {
    this.store.finishPodTermination(namespace, name);
  }

  // ---- RBAC view with the authorizer's lag ---------------------------------

  #remember(change: Change): void {
    if (change.type !== 'DELETED' || change.resource.group !== 'rbac.authorization.k8s.io' || this.#authorizerLagMs <= 0) return;
    this.#ghosts.push({ type: change.resource.resource, object: change.object, until: performance.now() + this.#authorizerLagMs });
  }

  #rbacView(): RbacView {
    const now = performance.now();
    for (let i = this.#ghosts.length - 1; i >= 0; i--) if (this.#ghosts[i]!.until <= now) this.#ghosts.splice(i, 1);
    const rbac = (resource: string) => this.type('rbac.authorization.k8s.io/v1', resource);
    const withGhosts = (resource: string, live: KubeObject[], namespace?: string) => [
      ...live,
      ...this.#ghosts
        .filter((g) => g.type === resource && (namespace === undefined || g.object.metadata.namespace === namespace))
        .filter((g) => !live.some((o) => o.metadata.name === g.object.metadata.name))
        .map((g) => g.object),
    ];
    return {
      clusterRoles: () => withGhosts('clusterroles', this.store.list(rbac('clusterroles'))),
      clusterRoleBindings: () => withGhosts('clusterrolebindings', this.store.list(rbac('clusterrolebindings'))),
      roles: (ns) => withGhosts('roles', this.store.list(rbac('roles'), ns), ns),
      roleBindings: (ns) => withGhosts('rolebindings', this.store.list(rbac('rolebindings'), ns), ns),
    };
  }

  // ---- request handling ----------------------------------------------------

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const at = this.clock.now();
    let info: RequestInfo = { method: req.method ?? 'GET', path: '/', query: {}, verb: (req.method ?? 'get').toLowerCase() };
    const finish = (status: number) => {
      const rec: RecordedRequest = { ...info, status, durationMs: Math.round((performance.now() - started) * 10) / 10, at };
      this.requests.push(rec);
      this.emit('request', rec);
    };
    try {
      const raw = await readBody(req);
      info = this.#parse(req, raw);
      const fault = this.#takeFault(info);
      if (fault?.delayMs) await new Promise((r) => setTimeout(r, fault.delayMs));
      if (fault?.drop) {
        req.socket.destroy();
        finish(0);
        return;
      }
      if (fault?.status) throw new ApiError(fault.status, fault.message ?? `injected fault: ${fault.status}`);
      const user = this.#authenticate(req.headers.authorization);
      if (!user) throw new ApiError(401, 'Unauthorized');
      info = { ...info, user: user.name };
      const { status, body, stream } = this.#serve(info, user, req, res);
      if (stream) {
        res.on('close', () => finish(200));
        return;
      }
      if (typeof body === 'string') {
        res.writeHead(status, { 'content-type': 'text/plain' });
        res.end(body);
      } else json(res, status, body);
      finish(status);
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError(500, `internal error in the test API server: ${(err as Error)?.stack ?? err}`);
      if (!res.headersSent) json(res, e.code, e.toStatus());
      else res.destroy();
      finish(e.code);
    }
  }

  #takeFault(info: RequestInfo): Fault | undefined {
    for (const active of this.#faults) {
      const { fault } = active;
      if (active.removed || (fault.times !== undefined && active.hits >= fault.times)) continue;
      if (fault.match && !fault.match(info)) continue;
      active.hits++;
      return fault;
    }
    return undefined;
  }

  #parse(req: IncomingMessage, raw: Buffer): RequestInfo {
    const url = new URL(req.url ?? '/', 'http://x');
    const method = req.method ?? 'GET';
    const query = Object.fromEntries(url.searchParams);
    const contentType = req.headers['content-type']?.split(';')[0]?.trim();
    let body: any;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        throw new ApiError(400, `the body of the request could not be decoded as JSON`);
      }
    }
    const base: RequestInfo = { method, path: url.pathname, query, verb: method.toLowerCase(), contentType, body };
    const segs = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    let group: string;
    let version: string;
    let rest: string[];
    if (segs[0] === 'api' && segs.length >= 3) [group, version, rest] = ['', segs[1]!, segs.slice(2)];
    else if (segs[0] === 'apis' && segs.length >= 4) [group, version, rest] = [segs[1]!, segs[2]!, segs.slice(3)];
    else return base;
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    let [resource, name, subresource] = rest;
    // A namespace's own subresources: /api/v1/namespaces/NAME/status.
    if (namespace !== undefined && group === '' && rest.length === 1 && this.store.types.find('', version, rest[0]!) === undefined) {
      [resource, name, subresource, namespace] = ['namespaces', namespace, rest[0], undefined];
    }
    const named = name !== undefined;
    const verb =
      ({ GET: named ? 'get' : ['true', '1'].includes(query.watch ?? '') ? 'watch' : 'list', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: named ? 'delete' : 'deletecollection' } as Record<string, string>)[method] ??
      method.toLowerCase();
    return { ...base, verb, apiGroup: group, apiVersion: version, resource, name, subresource, namespace };
  }

  #serve(info: RequestInfo, user: UserInfo, req: IncomingMessage, res: ServerResponse): { status: number; body?: unknown; stream?: boolean } {
    if (info.resource === undefined) return this.#nonResource(info, user);
    const type = this.store.types.find(info.apiGroup!, info.apiVersion!, info.resource);
    if (!type || (info.namespace !== undefined && !type.namespaced)) throw new ApiError(404, 'the server could not find the requested resource');
    if (info.subresource !== undefined && !(type.subresources ?? []).includes(info.subresource)) {
      throw new ApiError(404, 'the server could not find the requested resource');
    }
    const attrs: Attributes = { verb: info.verb, resource: type.resource, subresource: info.subresource, apiGroup: type.group, namespace: info.namespace, name: info.name, path: info.path };
    if (!authorize(this.#rbacView(), user, attrs)) throw forbidden(user, attrs);
    const ns = type.namespaced ? info.namespace : undefined;
    switch (info.verb) {
      case 'get':
        return { status: 200, body: this.store.mustGet(type, ns, info.name!) };
      case 'list':
        return { status: 200, body: this.#list(type, ns, info.query) };
      case 'watch':
        this.#watch(type, ns, info.query, req, res);
        return { status: 200, stream: true };
      case 'create':
        this.#checkEscalation(type, user, undefined, { ...info.body, metadata: { ...info.body?.metadata, namespace: ns } });
        return { status: 201, body: this.store.create(type, ns, info.body) };
      case 'update':
      case 'patch': {
        const old = this.store.mustGet(type, ns, info.name!);
        let next: KubeObject;
        if (info.verb === 'update') next = info.body;
        else next = applyPatch(old, info.body ?? null, info.contentType ?? '') as KubeObject;
        if (info.subresource === 'status') return { status: 200, body: this.store.update(type, ns, info.name!, next, { statusOnly: true }) };
        if (next?.metadata?.resourceVersion !== undefined && next.metadata.resourceVersion !== '' && next.metadata.resourceVersion !== old.metadata.resourceVersion) {
          return { status: 200, body: this.store.update(type, ns, info.name!, next) }; // throws the conflict
        }
        this.#checkEscalation(type, user, old, next);
        return { status: 200, body: this.store.update(type, ns, info.name!, next) };
      }
      case 'delete': {
        const { object, gone } = this.store.delete(type, ns, info.name!, deleteOptions(info));
        if (!gone || (type.group === '' && type.resource === 'pods')) return { status: 200, body: object };
        return {
          status: 200,
          body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name: info.name, group: type.group, kind: type.resource, uid: object.metadata.uid } },
        };
      }
      case 'deletecollection': {
        for (const obj of this.#list(type, ns, info.query).items) this.store.delete(type, obj.metadata.namespace, obj.metadata.name, deleteOptions(info));
        return { status: 200, body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success' } };
      }
      default:
        throw new ApiError(405, `the server does not allow this method on the requested resource`, { reason: 'MethodNotAllowed' });
    }
  }

  #list(type: ResourceType, ns: string | undefined, query: Record<string, string>): { items: KubeObject[]; [k: string]: unknown } {
    const byLabel = labelSelector(query.labelSelector ?? null);
    const byField = fieldSelector(query.fieldSelector ?? null);
    const items = this.store
      .list(type, ns)
      .filter((o) => byLabel(o) && byField(o))
      .map((o) => {
        // Lists of built-in types carry kind and apiVersion once, on the list.
        if (!type.crd) {
          delete o.kind;
          delete o.apiVersion;
        }
        return o;
      });
    return { kind: `${type.kind}List`, apiVersion: apiVersionOf(type), metadata: { resourceVersion: this.store.resourceVersion }, items };
  }

  /** A watch: ADDED events for what exists (unless a resourceVersion is given), then changes as they happen. */
  #watch(type: ResourceType, ns: string | undefined, query: Record<string, string>, req: IncomingMessage, res: ServerResponse): void {
    const byLabel = labelSelector(query.labelSelector ?? null);
    const byField = fieldSelector(query.fieldSelector ?? null);
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    const send = (eventType: string, object: KubeObject) => res.write(`${JSON.stringify({ type: eventType, object })}\n`);
    if (!query.resourceVersion) for (const o of this.store.list(type, ns)) if (byLabel(o) && byField(o)) send('ADDED', o);
    const onChange = (c: Change) => {
      if (c.resource.group !== type.group || c.resource.resource !== type.resource) return;
      if (ns !== undefined && c.object.metadata.namespace !== ns) return;
      const o = { ...c.object, apiVersion: apiVersionOf(type) };
      if (byLabel(o) && byField(o)) send(c.type, o);
    };
    this.store.on('change', onChange);
    const timeout = query.timeoutSeconds ? setTimeout(() => res.end(), Number(query.timeoutSeconds) * 1000) : undefined;
    const stop = () => {
      clearTimeout(timeout);
      this.store.off('change', onChange);
    };
    res.on('close', stop);
    req.on('close', stop);
  }

  /** Writes to roles and bindings that change more than finalizers and ownerReferences must not grant what the user lacks. */
  #checkEscalation(type: ResourceType, user: UserInfo, old: KubeObject | undefined, next: KubeObject): void {
    if (type.group !== 'rbac.authorization.k8s.io' || isSuperuser(user)) return;
    if (old && next && typeof next === 'object' && next.metadata && onlyGcFieldsChanged(old, next)) return;
    const view = this.#rbacView();
    const namespace = type.namespaced ? (next?.metadata?.namespace ?? old?.metadata.namespace) : undefined;
    const name = next?.metadata?.name ?? old?.metadata.name;
    const owned = rulesFor(view, user, namespace);
    let wanted: any[];
    if (type.resource === 'clusterroles' || type.resource === 'roles') {
      if (authorize(view, user, { verb: 'escalate', apiGroup: type.group, resource: type.resource, namespace, name, path: '' })) return;
      wanted = next?.rules ?? [];
    } else {
      const ref = next?.roleRef ?? {};
      const refType = ref.kind === 'Role' ? 'roles' : 'clusterroles';
      if (authorize(view, user, { verb: 'bind', apiGroup: type.group, resource: refType, namespace: ref.kind === 'Role' ? namespace : undefined, name: ref.name, path: '' })) return;
      const role = ref.kind === 'Role' ? view.roles(namespace!).find((r) => r.metadata.name === ref.name) : view.clusterRoles().find((r) => r.metadata.name === ref.name);
      if (!role) throw new ApiError(404, `${qualified(refType, type.group)} "${ref.name}" not found`, { details: { name: ref.name, group: type.group, kind: refType } });
      wanted = role.rules ?? [];
    }
    const missing = uncovered(owned, wanted);
    if (missing.length === 0) return;
    const groups = `[${user.groups.map((g) => JSON.stringify(g)).join(' ')}]`;
    throw new ApiError(
      403,
      `${qualified(type.resource, type.group)} "${name}" is forbidden: user "${user.name}" (groups=${groups}) is attempting to grant RBAC permissions not currently held:\n${missing.map(formatRule).join('\n')}`,
      { details: { name, group: type.group, kind: type.resource } },
    );
  }

  #nonResource(info: RequestInfo, user: UserInfo): { status: number; body: unknown } {
    if (info.method !== 'GET') throw new ApiError(405, 'the server does not allow this method on the requested resource', { reason: 'MethodNotAllowed' });
    const types = this.store.types.all();
    const segs = info.path.split('/').filter(Boolean);
    // Discovery and health are open to every authenticated user (the default system:discovery binding).
    void user;
    if (info.path === '/version') return { status: 200, body: { major: '1', minor: '32', gitVersion: 'v1.32.0-drainguard-test', platform: 'linux/amd64' } };
    if (['/healthz', '/livez', '/readyz'].includes(info.path)) return { status: 200, body: 'ok' };
    if (info.path === '/api') return { status: 200, body: { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: `127.0.0.1:${this.#port}` }] } };
    const group = (name: string, versions: string[]) => ({
      name,
      versions: versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v })),
      preferredVersion: { groupVersion: `${name}/${versions[0]}`, version: versions[0] },
    });
    if (info.path === '/apis') {
      return { status: 200, body: { kind: 'APIGroupList', apiVersion: 'v1', groups: [...this.store.types.groups()].map(([name, versions]) => group(name, versions)) } };
    }
    if (segs[0] === 'apis' && segs.length === 2) {
      const versions = this.store.types.groups().get(segs[1]!);
      if (!versions) throw new ApiError(404, 'the server could not find the requested resource');
      return { status: 200, body: { kind: 'APIGroup', apiVersion: 'v1', ...group(segs[1]!, versions) } };
    }
    const gv = segs[0] === 'api' && segs.length === 2 ? ['', segs[1]] : segs[0] === 'apis' && segs.length === 3 ? [segs[1], segs[2]] : undefined;
    if (gv) {
      const served = types.filter((x) => x.group === gv[0] && x.version === gv[1]);
      if (served.length === 0) throw new ApiError(404, 'the server could not find the requested resource');
      const resources = served.flatMap((x) => [
        {
          name: x.resource,
          singularName: x.singular,
          namespaced: x.namespaced,
          kind: x.kind,
          verbs: [...VERBS, 'watch'],
          ...(x.shortNames?.length && { shortNames: x.shortNames }),
        },
        ...(x.subresources ?? []).map((s) => ({ name: `${x.resource}/${s}`, singularName: '', namespaced: x.namespaced, kind: x.kind, verbs: ['get', 'patch', 'update'] })),
      ]);
      return { status: 200, body: { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gv[0] ? `${gv[0]}/${gv[1]}` : gv[1], resources } };
    }
    throw new ApiError(404, 'the server could not find the requested resource');
  }
}

function forbidden(user: UserInfo, a: Attributes): ApiError {
  const what = a.subresource ? `${a.resource}/${a.subresource}` : a.resource!;
  const subject = a.name ? `${qualified(a.resource!, a.apiGroup ?? '')} "${a.name}"` : qualified(a.resource!, a.apiGroup ?? '');
  const scope = a.namespace === undefined ? 'at the cluster scope' : `in the namespace "${a.namespace}"`;
  return new ApiError(403, `${subject} is forbidden: User "${user.name}" cannot ${a.verb} resource "${what}" in API group "${a.apiGroup ?? ''}" ${scope}`, {
    details: { ...(a.name && { name: a.name }), group: a.apiGroup ?? '', kind: a.resource! },
  });
}

function deleteOptions(info: RequestInfo): DeleteOptions {
  const body = info.body && typeof info.body === 'object' ? info.body : {};
  const policy = body.propagationPolicy ?? info.query.propagationPolicy;
  if (policy !== undefined && !['Background', 'Foreground', 'Orphan'].includes(policy)) {
    throw new ApiError(422, `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: ${JSON.stringify(policy)}: supported values: "Foreground", "Background", "Orphan", "nil"`);
  }
  const grace = body.gracePeriodSeconds ?? (info.query.gracePeriodSeconds !== undefined ? Number(info.query.gracePeriodSeconds) : undefined);
  return { propagationPolicy: policy, gracePeriodSeconds: grace, preconditions: body.preconditions };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) reject(new ApiError(413, 'the request body is too large'));
      else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Starts a fake API server on 127.0.0.1, port 0. */
export async function startApiServer(options: ApiServerOptions = {}): Promise<FakeApiServer> {
  const server = new FakeApiServer(options);
  await server.listen();
  return server;
}
