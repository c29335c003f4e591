// Who a request is, as kube-apiserver's authenticators say: an x509 client
// certificate signed by the cluster CA (CN the user, O the groups), a
// service account token (valid while its ServiceAccount and bound object
// exist, and for a minute after their deletionTimestamp; successes cached
// for 10 s), else anonymous. Impersonation headers on top, authorized.

import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { ApiError } from './errors.ts';
import type { InformerView } from './informer.ts';
import { type Attributes, type UserInfo } from './rbac.ts';
import { ISSUER, type TokenClaims, type TokenIssuer } from './tokens.ts';

/** A deleted ServiceAccount's (or bound object's) tokens keep working this long after its deletionTimestamp (pkg/serviceaccount/claims.go). */
export const DELETION_LEEWAY_MS = 60_000;
/** kube-apiserver caches a successful token check this long (--token-auth-cache-ttl... the authenticator's successTTL). */
export const TOKEN_CACHE_MS = 10_000;

export const UNAUTHORIZED = () => new ApiError(401, 'Unauthorized');

export const ANONYMOUS: UserInfo = { name: 'system:anonymous', groups: ['system:unauthenticated'] };

export class Authenticator {
  readonly #issuer: TokenIssuer;
  readonly #view: InformerView;
  readonly #now: () => number;
  readonly #cache = new Map<string, { user: UserInfo; until: number }>();

  constructor(issuer: TokenIssuer, view: InformerView, now: () => number) {
    this.#issuer = issuer;
    this.#view = view;
    this.#now = now;
  }

  /** The user of a request, before impersonation; throws 401 for credentials that do not hold. */
  authenticate(req: IncomingMessage): UserInfo {
    const header = req.headers.authorization;
    if (header !== undefined) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!m) throw UNAUTHORIZED();
      return this.#token(m[1]!);
    }
    const socket = req.socket as TLSSocket;
    const cert = typeof socket.getPeerCertificate === 'function' ? socket.getPeerCertificate() : undefined;
    if (cert && Object.keys(cert).length > 0) {
      if (!socket.authorized) throw UNAUTHORIZED();
      const o = cert.subject.O;
      const groups = o === undefined ? [] : Array.isArray(o) ? o : [o];
      return { name: String(cert.subject.CN), groups: [...groups, 'system:authenticated'] };
    }
    return ANONYMOUS;
  }

  #token(token: string): UserInfo {
    const now = this.#now();
    const cached = this.#cache.get(token);
    if (cached && cached.until > now) return cached.user;
    const claims = this.#issuer.verify(token, now, [ISSUER]);
    const user = claims && this.#valid(claims, now);
    if (!user) throw UNAUTHORIZED();
    this.#cache.set(token, { user, until: now + TOKEN_CACHE_MS });
    return user;
  }

  /** The user of valid claims: its ServiceAccount and bound object exist (with their uids) and are not deleted past the leeway. */
  #valid(claims: TokenClaims, now: number): UserInfo | undefined {
    const k = claims['kubernetes.io'];
    const alive = (storage: string, namespace: string | undefined, ref: { name: string; uid: string } | undefined) => {
      if (!ref) return true;
      const o = this.#view.getOrLive(storage, namespace, ref.name);
      if (!o || o.metadata.uid !== ref.uid) return false;
      const deleting = o.metadata.deletionTimestamp;
      return !deleting || now < Date.parse(deleting) + DELETION_LEEWAY_MS;
    };
    if (!alive('/serviceaccounts', k.namespace, k.serviceaccount)) return undefined;
    if (!alive('/pods', k.namespace, k.pod) || !alive('/secrets', k.namespace, k.secret) || !alive('/nodes', undefined, k.node)) return undefined;
    const extra: Record<string, string[]> = { 'authentication.kubernetes.io/credential-id': [`JTI=${claims.jti}`] };
    if (k.node) {
      extra['authentication.kubernetes.io/node-name'] = [k.node.name];
      extra['authentication.kubernetes.io/node-uid'] = [k.node.uid];
    }
    if (k.pod) {
      extra['authentication.kubernetes.io/pod-name'] = [k.pod.name];
      extra['authentication.kubernetes.io/pod-uid'] = [k.pod.uid];
    }
    return {
      name: claims.sub,
      uid: k.serviceaccount.uid,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${k.namespace}`, 'system:authenticated'],
      extra,
    };
  }
}

/**
 * The user a request acts as: its own, or the one its Impersonate-* headers
 * name, if `may` allows each of them (the `impersonate` verb).
 */
export function impersonate(req: IncomingMessage, user: UserInfo, may: (a: Attributes) => boolean): UserInfo {
  // Each header line is one value (Go's net/http); node joins repeated ones with ", " unless asked for them apart.
  const h = req.headersDistinct;
  const asUser = h['impersonate-user']?.[0];
  const groups = h['impersonate-group'] ?? [];
  const uid = h['impersonate-uid']?.[0];
  const extra: Record<string, string[]> = {};
  for (const [name, values] of Object.entries(h)) {
    if (!name.startsWith('impersonate-extra-') || !values) continue;
    extra[decodeURIComponent(name.slice('impersonate-extra-'.length))] = values;
  }
  if (asUser === undefined) {
    if (groups.length > 0 || uid !== undefined || Object.keys(extra).length > 0) throw new ApiError(500, 'requested [' + [...groups.map((g) => `{Group ${g}}`)].join(' ') + '] without impersonating a user');
    return user;
  }
  const deny = (what: string) => new ApiError(403, `${what} is forbidden: User "${user.name}" cannot impersonate resource "${what.split(' ')[0]}" in API group "" at the cluster scope`, { details: {} });
  const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(asUser);
  const target: Attributes = sa
    ? { verb: 'impersonate', apiGroup: '', resource: 'serviceaccounts', namespace: sa[1], name: sa[2], path: '' }
    : { verb: 'impersonate', apiGroup: '', resource: 'users', name: asUser, path: '' };
  if (!may(target)) throw deny(`${target.resource} "${asUser}"`);
  for (const g of groups) if (!may({ verb: 'impersonate', apiGroup: '', resource: 'groups', name: g, path: '' })) throw deny(`groups "${g}"`);
  for (const [key, values] of Object.entries(extra)) {
    for (const v of values) if (!may({ verb: 'impersonate', apiGroup: 'authentication.k8s.io', resource: 'userextras', subresource: key, name: v, path: '' })) throw deny(`userextras/${key} "${v}"`);
  }
  if (uid !== undefined && !may({ verb: 'impersonate', apiGroup: 'authentication.k8s.io', resource: 'uids', name: uid, path: '' })) throw deny(`uids "${uid}"`);
  const finalGroups = groups.length === 0 && sa ? ['system:serviceaccounts', `system:serviceaccounts:${sa[1]}`] : [...groups];
  if (asUser !== 'system:anonymous' && !finalGroups.includes('system:authenticated')) finalGroups.push('system:authenticated');
  return { name: asUser, ...(uid !== undefined && { uid }), groups: finalGroups, ...(Object.keys(extra).length > 0 && { extra }) };
}
