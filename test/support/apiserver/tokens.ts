// Service account tokens as kube-apiserver issues them for TokenRequest:
// RS256 JWTs signed with the control plane's service-account key, with the
// kubernetes.io claims (namespace, ServiceAccount, the bound Pod and its Node).

import { type KeyObject, createHash, createPrivateKey, createPublicKey, randomUUID, sign, verify } from 'node:crypto';

export const ISSUER = 'https://kubernetes.default.svc.cluster.local';

export interface Ref {
  readonly name: string;
  readonly uid: string;
}

export interface TokenClaims {
  readonly aud: string[];
  readonly exp: number;
  readonly iat: number;
  readonly nbf: number;
  readonly iss: string;
  readonly jti: string;
  readonly sub: string;
  readonly 'kubernetes.io': {
    readonly namespace: string;
    readonly serviceaccount: Ref;
    readonly pod?: Ref;
    readonly secret?: Ref;
    readonly node?: Ref;
  };
}

const b64 = (data: Buffer | string) => Buffer.from(data).toString('base64url');

export class TokenIssuer {
  readonly #private: KeyObject;
  readonly #public: KeyObject;
  readonly #kid: string;

  constructor(privatePem: string, publicPem: string) {
    this.#private = createPrivateKey(privatePem);
    this.#public = createPublicKey(publicPem);
    this.#kid = b64(createHash('sha256').update(this.#public.export({ type: 'spki', format: 'der' })).digest());
  }

  issue(options: { namespace: string; serviceAccount: Ref; audiences: string[]; expirationSeconds: number; now: number; pod?: Ref; secret?: Ref; node?: Ref }): { token: string; claims: TokenClaims } {
    const iat = Math.floor(options.now / 1000);
    const claims: TokenClaims = {
      aud: options.audiences,
      exp: iat + options.expirationSeconds,
      iat,
      iss: ISSUER,
      jti: randomUUID(),
      'kubernetes.io': {
        namespace: options.namespace,
        ...(options.node && { node: options.node }),
        ...(options.pod && { pod: options.pod }),
        ...(options.secret && { secret: options.secret }),
        serviceaccount: options.serviceAccount,
      },
      nbf: iat,
      sub: `system:serviceaccount:${options.namespace}:${options.serviceAccount.name}`,
    };
    const head = `${b64(JSON.stringify({ alg: 'RS256', kid: this.#kid }))}.${b64(JSON.stringify(claims))}`;
    return { token: `${head}.${b64(sign('sha256', Buffer.from(head), this.#private))}`, claims };
  }

  /** The claims of a token this issuer signed that is valid at `now` for one of `audiences`; undefined otherwise. */
  verify(token: string, now: number, audiences: readonly string[]): TokenClaims | undefined {
    const parts = token.split('.');
    if (parts.length !== 3) return undefined;
    let claims: TokenClaims;
    try {
      const head = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8'));
      if (head.alg !== 'RS256') return undefined;
      if (!verify('sha256', Buffer.from(`${parts[0]}.${parts[1]}`), this.#public, Buffer.from(parts[2]!, 'base64url'))) return undefined;
      claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
    } catch {
      return undefined;
    }
    const seconds = Math.floor(now / 1000);
    if (claims.iss !== ISSUER || !claims['kubernetes.io']?.serviceaccount) return undefined;
    if (!claims.aud?.some((a) => audiences.includes(a))) return undefined;
    // jwt's default leeway of a minute on the time claims (square/go-jose).
    if (seconds > claims.exp + 60 || seconds < claims.nbf - 60) return undefined;
    return claims;
  }
}
