// The HTTPS front of the stand-in: kube-apiserver's request path on
// 127.0.0.1 with the cluster's serving certificate. Each request is
// authenticated (client certificate, service account token, anonymous),
// impersonation applied, authorized by RBAC, then served: discovery, CRUD,
// watch, the subresources (status, binding, eviction, token, finalize) and
// the reviews (SelfSubjectReview, SelfSubjectAccessReview, TokenReview, ...).

import { createWriteStream } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { Socket } from 'node:net';
import { parse as parseYaml } from 'yaml';
import { Authenticator, impersonate } from './authn.ts';
import { ApiError, badRequest, conflict, forbidden, invalid, methodNotAllowed, notFound, notFoundPath } from './errors.ts';
import { discovery, openApi } from './discovery.ts';
import type { InformerView } from './informer.ts';
import { APPLY_PATCH } from './patch.ts';
import { decodeProtobuf, isProtobuf } from './protobuf.ts';
import { type Attributes, type RbacView, type UserInfo, authorize, isSuperuser, rulesFor } from './rbac.ts';
import type { DeleteOptions, Registry } from './registry.ts';
import { type ResourceType, apiVersionOf, groupOf, versionOf } from './resources.ts';
import { timestamp } from './strategies.ts';
import { ISSUER, type TokenIssuer } from './tokens.ts';
import { serveWatch } from './watch.ts';

const MAX_BODY = 3 * 1024 * 1024;

export interface ServerOptions {
  readonly registry: Registry;
  readonly issuer: TokenIssuer;
  /** The authorizer's and authenticators' view of the store. */
  readonly view: InformerView;
  readonly rbac: RbacView;
  readonly tls: { readonly cert: string; readonly key: string; readonly ca: string };
}

/** What kube-apiserver's RequestInfoFactory makes of a path. */
interface RequestInfo {
  readonly path: string;
  readonly query: Record<string, string>;
  readonly verb: string;
  readonly resourceRequest: boolean;
  readonly group: string;
  readonly version: string;
  readonly namespace?: string;
  readonly resource?: string;
  readonly name?: string;
  readonly subresource?: string;
}

const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

function requestInfo(method: string, url: URL): RequestInfo {
  const query = Object.fromEntries(url.searchParams);
  const path = url.pathname;
  const segs = path.split('/').filter(Boolean).map(decodeURIComponent);
  const plain: RequestInfo = { path, query, verb: method.toLowerCase(), resourceRequest: false, group: '', version: '' };
  let group: string;
  let version: string;
  let parts: string[];
  if (segs[0] === 'api' && segs.length >= 3) [group, version, parts] = ['', segs[1]!, segs.slice(2)];
  else if (segs[0] === 'apis' && segs.length >= 4) [group, version, parts] = [segs[1]!, segs[2]!, segs.slice(3)];
  else return plain;
  let namespace: string | undefined;
  if (parts[0] === 'namespaces' && parts.length > 1) {
    namespace = parts[1];
    if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2]!)) parts = parts.slice(2);
  }
  const [resource, name, subresource] = parts;
  const watch = query.watch === 'true' || query.watch === '1';
  const verbs: Record<string, string> = { GET: name === undefined ? (watch ? 'watch' : 'list') : watch ? 'watch' : 'get', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: name === undefined ? 'deletecollection' : 'delete' };
  return { path, query, verb: verbs[method] ?? method.toLowerCase(), resourceRequest: true, group, version, namespace, resource, name, subresource };
}

/**
 * A list or watch whose fieldSelector requires metadata.name=NAME is authorized as a request for
 * that name, so RBAC resourceNames grant it (requestinfo.go sets RequestInfo.Name from it; the
 * comment in handlers/get.go ListResource says so).
 */
function selectedName(info: RequestInfo): string | undefined {
  if (info.verb !== 'list' && info.verb !== 'watch') return undefined;
  const terms = (info.query.fieldSelector ?? '').split(',').filter(Boolean);
  const names = terms.map((t) => /^metadata\.name==?(.+)$/.exec(t)?.[1]).filter((n): n is string => n !== undefined);
  return names.length === 1 && !names[0]!.includes('/') ? names[0] : undefined;
}

const json = (res: ServerResponse, status: number, body: unknown): void => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-cache, private' });
  res.end(text);
};

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) reject(new ApiError(413, 'Request entity too large: limit is 3145728'));
      else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** The message of an RBAC denial (the handler's forbidden: `... cannot VERB resource "R" in API group "G" ...`). */
function denied(user: UserInfo, a: Attributes): ApiError {
  if (a.resource === undefined) return new ApiError(403, `forbidden: User "${user.name}" cannot ${a.verb} path "${a.path}"`, { details: {} });
  const what = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const scope = a.namespace ? `in the namespace "${a.namespace}"` : 'at the cluster scope';
  return forbidden({ resource: what, group: a.apiGroup ?? '', name: a.name }, `User "${user.name}" cannot ${a.verb} resource "${what}" in API group "${a.apiGroup ?? ''}" ${scope}`);
}

export class ApiServer {
  readonly #options: ServerOptions;
  readonly #authn: Authenticator;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #inFlight = new WeakMap<Socket, ServerResponse>();
  /** STANDIN_REQUEST_LOG=FILE: one line per request, for looking into what a client sent. */
  readonly #log = process.env.STANDIN_REQUEST_LOG ? createWriteStream(process.env.STANDIN_REQUEST_LOG, { flags: 'a' }) : undefined;
  #port = 0;

  constructor(options: ServerOptions) {
    this.#options = options;
    this.#authn = new Authenticator(options.issuer, options.view, () => options.registry.now());
    this.#server = createServer({ cert: options.tls.cert, key: options.tls.key, ca: options.tls.ca, requestCert: true, rejectUnauthorized: false }, (req, res) => void this.#handle(req, res));
    this.#server.keepAliveTimeout = 60_000;
    this.#server.on('connection', (s: Socket) => {
      this.#sockets.add(s);
      s.on('close', () => this.#sockets.delete(s));
    });
    // Bytes after a request that declared no body (a DELETE's DeleteOptions sent without
    // Content-Length) are no request: as Go's server does, the request before them is answered
    // as it came (with no body) and the connection is closed after it.
    this.#server.on('clientError', (_err, socket) => {
      const pending = this.#inFlight.get(socket as Socket);
      if (pending) pending.once('finish', () => socket.end());
      else if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    });
  }

  get port(): number {
    return this.#port;
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

  /** The port closed and every connection cut (watches end); listen(port) brings it back. */
  async close(): Promise<void> {
    if (!this.#server.listening) return;
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const s of this.#sockets) s.destroy();
    await closed;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.#inFlight.set(req.socket, res);
    res.once('finish', () => this.#inFlight.delete(req.socket));
    if (this.#log) {
      const t0 = performance.now();
      res.on('close', () => this.#log!.write(`${new Date().toISOString()} ${req.method} ${req.url} ${req.headers['content-type'] ?? '-'} ${req.headers['user-agent'] ?? '-'} ${res.statusCode} ${(performance.now() - t0).toFixed(1)}ms\n`));
    }
    try {
      const url = new URL(req.url ?? '/', 'https://127.0.0.1');
      const info = requestInfo(req.method ?? 'GET', url);
      const authenticated = this.#authn.authenticate(req);
      const may = (a: Attributes) => authorize(this.#options.rbac, authenticated, a);
      const user = impersonate(req, authenticated, may);
      const attrs = this.#attributes(info);
      if (!authorize(this.#options.rbac, user, attrs)) throw denied(user, attrs);
      if (!info.resourceRequest) return this.#nonResource(req, res, info);
      const raw = req.method === 'GET' || req.method === 'HEAD' ? Buffer.alloc(0) : await readBody(req);
      const contentType = req.headers['content-type']?.split(';')[0]?.trim() ?? '';
      const body = this.#decode(raw, contentType);
      if (info.query.dryRun) throw badRequest('dryRun is not supported by this API server (the stand-in); leave it out');
      await this.#resource(res, info, user, body, contentType);
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError(500, `Internal error occurred: ${(err as Error)?.stack ?? err}`);
      if (!res.headersSent) json(res, e.code, e.toStatus());
      else res.destroy();
    }
  }

  #attributes(info: RequestInfo): Attributes {
    if (!info.resourceRequest) return { verb: info.verb, path: info.path };
    return { verb: info.verb, apiGroup: info.group, resource: info.resource, subresource: info.subresource, namespace: info.namespace, name: info.name ?? selectedName(info), path: info.path };
  }

  #decode(raw: Buffer, contentType: string): unknown {
    if (raw.length === 0) return undefined;
    if (isProtobuf(contentType)) return decodeProtobuf(raw);
    const text = raw.toString('utf8');
    if (contentType === APPLY_PATCH || contentType === 'application/yaml') {
      try {
        return parseYaml(text);
      } catch (err) {
        throw badRequest(`error converting YAML to JSON: ${(err as Error).message}`);
      }
    }
    try {
      return JSON.parse(text);
    } catch (err) {
      throw badRequest(`couldn't get version/kind; json parse error: ${(err as Error).message}`);
    }
  }

  #nonResource(req: IncomingMessage, res: ServerResponse, info: RequestInfo): void {
    if (req.method !== 'GET' && req.method !== 'HEAD') throw methodNotAllowed();
    const { path } = info;
    if (['/healthz', '/livez', '/readyz'].includes(path) || /^\/(healthz|livez|readyz)\//.test(path)) {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' });
      res.end('ok');
      return;
    }
    if (path === '/openapi/v2') {
      // No definitions: kubectl's client-side validation finds no schema and skips it, as for a kind the server does not describe.
      if ((req.headers.accept ?? '').includes('protobuf')) {
        res.writeHead(200, { 'content-type': 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf', 'content-length': 0 });
        return void res.end();
      }
      return json(res, 200, { swagger: '2.0', info: { title: 'Kubernetes', version: 'v1.32.6' }, paths: {}, definitions: {} });
    }
    const types = this.#options.registry.types;
    const body = discovery(types, path, this.#port) ?? openApi(types, path);
    if (body === undefined) throw notFoundPath();
    json(res, 200, body);
  }

  async #resource(res: ServerResponse, info: RequestInfo, user: UserInfo, body: unknown, contentType: string): Promise<void> {
    const registry = this.#options.registry;
    const type = info.resource === undefined ? undefined : registry.types.find(info.group, info.version, info.resource);
    if (!type || (info.namespace !== undefined && !type.namespaced && info.resource !== 'namespaces')) throw notFoundPath();
    const namespace = type.namespaced ? info.namespace : undefined;
    if (type.namespaced && info.namespace === undefined && info.verb !== 'list' && info.verb !== 'watch') throw notFoundPath();
    const sub = info.subresource;
    if (sub !== undefined && !type.subresources[sub]) throw notFoundPath();
    if (type.virtual) return json(res, 201, this.#review(type, info, user, body));
    const caller = { user, fieldManager: info.query.fieldManager, force: info.query.force === 'true' };
    const name = type.resource === 'namespaces' && info.name === undefined && info.namespace !== undefined ? info.namespace : info.name;
    if (sub === 'binding') return json(res, 201, this.#bind(type, namespace!, name!, body));
    if (sub === 'eviction') return json(res, 201, this.#evict(type, namespace!, name!, body, caller));
    if (sub === 'token') return json(res, 201, this.#tokenRequest(namespace!, name!, body));
    switch (info.verb) {
      case 'get':
        return json(res, 200, registry.get(type, namespace, name!));
      case 'list': {
        const { items, resourceVersion } = registry.list(type, namespace, info.query);
        // Lists of built-in types carry kind and apiVersion once, on the list.
        if (!type.crd) {
          for (const o of items) {
            delete o.kind;
            delete o.apiVersion;
          }
        }
        return json(res, 200, { kind: `${type.kind}List`, apiVersion: apiVersionOf(type), metadata: { resourceVersion }, items });
      }
      case 'watch': {
        const query = name === undefined ? info.query : { ...info.query, fieldSelector: [info.query.fieldSelector, `metadata.name=${name}`].filter(Boolean).join(',') };
        return serveWatch(registry, type, namespace, query, res);
      }
      case 'create':
        if (name !== undefined) throw methodNotAllowed();
        return json(res, 201, registry.create(type, namespace, body, caller));
      case 'update':
        if (name === undefined) throw methodNotAllowed();
        return json(res, 200, registry.update(type, namespace, name, body, caller, sub));
      case 'patch': {
        if (name === undefined) throw methodNotAllowed();
        const existed = contentType === APPLY_PATCH && registry.find(type, namespace, name) !== undefined;
        const out = registry.patch(type, namespace, name, body, contentType, caller, sub);
        return json(res, contentType === APPLY_PATCH && !existed ? 201 : 200, out);
      }
      case 'delete':
        return json(res, 200, registry.delete(type, namespace, name!, deleteOptions(body, info.query), caller).object);
      case 'deletecollection':
        return json(res, 200, registry.deleteCollection(type, namespace, deleteOptions(body, info.query), info.query, caller));
      default:
        throw methodNotAllowed();
    }
  }

  /** pods/binding: the scheduler's (or kubelet's) assignment of a pod to a node. */
  #bind(type: ResourceType, namespace: string, name: string, body: any): unknown {
    const registry = this.#options.registry;
    const pod = registry.get(type, namespace, name);
    const node = body?.target?.name;
    if (!node) throw new ApiError(422, `Binding.core "${name}" is invalid: target.name: Required value`);
    if (body?.metadata?.uid && body.metadata.uid !== pod.metadata.uid) throw conflict({ resource: 'pods/binding', group: '', name }, `Precondition failed: UID in precondition: ${body.metadata.uid}, UID in object meta: ${pod.metadata.uid}`);
    if (pod.metadata.deletionTimestamp) throw conflict({ resource: 'pods/binding', group: '', name }, `pod ${name} is being deleted, cannot be assigned to a host`);
    if (pod.spec.nodeName) throw conflict({ resource: 'pods/binding', group: '', name }, `pod ${name} is already assigned to node "${pod.spec.nodeName}"`);
    // One write: the node name and the PodScheduled condition (pod storage BindingREST.assignPod).
    const stored = registry.store.get(type.storage, namespace, name)!;
    stored.spec.nodeName = node;
    const conditions = (stored.status?.conditions ?? []).filter((c: any) => c.type !== 'PodScheduled');
    stored.status = { ...stored.status, conditions: [...conditions, { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: timestamp(registry.now()) }] };
    registry.store.update(type.storage, stored);
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 };
  }

  /** pods/eviction: the pod marked DisruptionTarget, then deleted gracefully (no PodDisruptionBudget is consulted). */
  #evict(type: ResourceType, namespace: string, name: string, body: any, caller: { user: UserInfo }): unknown {
    const registry = this.#options.registry;
    const pod = registry.get(type, namespace, name);
    const options: DeleteOptions = body?.deleteOptions ?? {};
    if (!pod.metadata.deletionTimestamp && !['Succeeded', 'Failed'].includes(pod.status?.phase)) {
      registry.mutate(type, namespace, name, (p) => {
        const conditions = (p.status.conditions ?? []).filter((c: any) => c.type !== 'DisruptionTarget');
        p.status.conditions = [...conditions, { type: 'DisruptionTarget', status: 'True', lastProbeTime: null, lastTransitionTime: timestamp(registry.now()), reason: 'EvictionByEvictionAPI', message: 'Eviction API: evicting' }];
      }, caller, 'status');
    }
    if (!pod.metadata.deletionTimestamp) registry.delete(type, namespace, name, options, caller);
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 };
  }

  /** serviceaccounts/token: a TokenRequest, optionally bound to a Pod, Secret or Node. */
  #tokenRequest(namespace: string, name: string, body: any): unknown {
    const registry = this.#options.registry;
    const sa = registry.store.get('/serviceaccounts', namespace, name);
    if (!sa) throw notFound({ resource: 'serviceaccounts', group: '', name });
    this.#admitNamespaced(namespace, name);
    const spec = body?.spec ?? {};
    const expirationSeconds = spec.expirationSeconds ?? 3600;
    // The TokenRequest's own name (usually none) is what the message names (ValidateTokenRequest).
    const own = body?.metadata?.name ?? '';
    if (expirationSeconds < 600) throw invalid('TokenRequest', 'authentication.k8s.io', own, [{ field: 'spec.expirationSeconds', message: `Invalid value: ${expirationSeconds}: may not specify a duration less than 10 minutes` }]);
    if (expirationSeconds > 2 ** 32) throw invalid('TokenRequest', 'authentication.k8s.io', own, [{ field: 'spec.expirationSeconds', message: `Invalid value: ${expirationSeconds}: may not specify a duration larger than 2^32 seconds` }]);
    const ref = spec.boundObjectRef;
    let pod: { name: string; uid: string } | undefined;
    let secret: { name: string; uid: string } | undefined;
    let node: { name: string; uid: string } | undefined;
    if (ref) {
      const storage = ref.apiVersion === 'v1' ? ({ Pod: '/pods', Secret: '/secrets', Node: '/nodes' } as Record<string, string>)[ref.kind] : undefined;
      if (!storage) throw badRequest(`cannot bind token to object of type ${groupOf(ref.apiVersion ?? '')}/${versionOf(ref.apiVersion ?? '')}, Kind=${ref.kind}`);
      const o = registry.store.get(storage, ref.kind === 'Node' ? undefined : namespace, ref.name);
      if (!o) throw notFound({ resource: storage.slice(1), group: '', name: ref.name });
      if (ref.kind === 'Pod' && o.spec?.serviceAccountName !== name) throw badRequest(`cannot bind token for serviceaccount "${name}" to pod running with different serviceaccount name.`);
      if (ref.uid && ref.uid !== o.metadata.uid) throw conflict({ resource: ref.kind, group: '', name: ref.name }, `the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`);
      const bound = { name: o.metadata.name, uid: o.metadata.uid };
      if (ref.kind === 'Pod') {
        pod = bound;
        const n = o.spec?.nodeName && registry.store.get('/nodes', undefined, o.spec.nodeName);
        if (n) node = { name: n.metadata.name, uid: n.metadata.uid };
      } else if (ref.kind === 'Secret') secret = bound;
      else node = bound;
    }
    const audiences = spec.audiences?.length ? spec.audiences : [ISSUER];
    const now = registry.now();
    const { token, claims } = this.#options.issuer.issue({ namespace, serviceAccount: { name, uid: sa.metadata.uid }, audiences, expirationSeconds, now, pod, secret, node });
    return {
      kind: 'TokenRequest',
      apiVersion: 'authentication.k8s.io/v1',
      metadata: { name, namespace, creationTimestamp: null },
      spec: { audiences, expirationSeconds, boundObjectRef: ref ? { kind: ref.kind, apiVersion: 'v1', name: ref.name, uid: ref.uid || (pod ?? secret ?? node)!.uid } : null },
      status: { token, expirationTimestamp: timestamp(claims.exp * 1000) },
    };
  }

  /** NamespaceLifecycle for subresource creates (a TokenRequest in a terminating namespace is refused). */
  #admitNamespaced(namespace: string, name: string): void {
    const ns = this.#options.registry.store.get('/namespaces', undefined, namespace);
    if (ns?.status?.phase === 'Terminating') throw forbidden({ resource: 'serviceaccounts', group: '', name }, `unable to create new content in namespace ${namespace} because it is being terminated`);
  }

  #review(type: ResourceType, info: RequestInfo, user: UserInfo, body: any): unknown {
    const base = { kind: type.kind, apiVersion: apiVersionOf(type), metadata: { creationTimestamp: null } };
    const userInfo = (u: UserInfo) => ({ username: u.name, ...(u.uid && { uid: u.uid }), groups: [...u.groups], ...(u.extra && { extra: u.extra }) });
    switch (type.resource) {
      case 'selfsubjectreviews':
        return { ...base, status: { userInfo: userInfo(user) } };
      case 'tokenreviews': {
        const token = body?.spec?.token ?? '';
        try {
          const fake = { headers: { authorization: `Bearer ${token}` }, socket: {} } as unknown as IncomingMessage;
          const u = this.#authn.authenticate(fake);
          return { ...base, spec: body.spec, status: { authenticated: true, user: userInfo(u), audiences: [ISSUER] } };
        } catch {
          return { ...base, spec: body?.spec ?? {}, status: { user: {}, error: '[invalid bearer token, service account token has been invalidated]' } };
        }
      }
      case 'selfsubjectaccessreviews':
      case 'subjectaccessreviews':
      case 'localsubjectaccessreviews': {
        const spec = body?.spec ?? {};
        const who: UserInfo = type.resource === 'selfsubjectaccessreviews' ? user : { name: spec.user ?? '', uid: spec.uid, groups: spec.groups ?? [], extra: spec.extra };
        const r = spec.resourceAttributes;
        const n = spec.nonResourceAttributes;
        const a: Attributes = r
          ? { verb: r.verb ?? '', apiGroup: r.group ?? '', resource: r.resource ?? '', subresource: r.subresource || undefined, namespace: type.resource === 'localsubjectaccessreviews' ? info.namespace : r.namespace || undefined, name: r.name || undefined, path: '' }
          : { verb: n?.verb ?? '', path: n?.path ?? '' };
        const allowed = authorize(this.#options.rbac, who, a);
        return { ...base, spec, status: { allowed, ...(allowed && !isSuperuser(who) && { reason: 'RBAC: allowed' }) } };
      }
      case 'selfsubjectrulesreviews': {
        const ns = body?.spec?.namespace;
        const rules = isSuperuser(user) ? [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }] : rulesFor(this.#options.rbac, user, ns).filter((r) => r.resources);
        const nonResource = isSuperuser(user) ? [{ verbs: ['*'], nonResourceURLs: ['*'] }] : rulesFor(this.#options.rbac, user, ns).filter((r) => r.nonResourceURLs);
        return { ...base, spec: body?.spec ?? {}, status: { resourceRules: rules, nonResourceRules: nonResource, incomplete: false } };
      }
      default:
        throw notFoundPath();
    }
  }

}

function deleteOptions(body: any, query: Record<string, string>): DeleteOptions {
  const b = body && typeof body === 'object' ? body : {};
  const policy = b.propagationPolicy ?? query.propagationPolicy;
  if (policy !== undefined && !['Background', 'Foreground', 'Orphan'].includes(policy)) {
    throw new ApiError(422, `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "${policy}": supported values: "Foreground", "Background", "Orphan", "nil"`);
  }
  const grace = b.gracePeriodSeconds ?? (query.gracePeriodSeconds !== undefined ? Number(query.gracePeriodSeconds) : undefined);
  const orphan = b.orphanDependents ?? (query.orphanDependents !== undefined ? query.orphanDependents === 'true' : undefined);
  return { propagationPolicy: policy, gracePeriodSeconds: grace, orphanDependents: orphan, preconditions: b.preconditions };
}

