// Who drainguard is to the API server: a bearer token (given, or a file read
// again when it changes, as the kubelet rotates the projected one), a client
// certificate, or an exec plugin's ExecCredential (cached until it expires,
// run again after a 401), plus the kubeconfig's impersonation headers.

import { execFile } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { DrainguardError } from '../errors.ts';
import type { ExecPlugin, KubeconfigCluster, KubeconfigUser } from './kubeconfig.ts';

export interface Credential {
  readonly headers: Readonly<Record<string, string | string[]>>;
  /** A client certificate and key (PEM). */
  readonly cert?: string;
  readonly key?: string;
}

export interface Credentials {
  current(): Promise<Credential>;
  /** After a 401: drop what is cached; true when the next `current()` may differ. */
  refresh(): boolean;
}

/** drainguard could not get credentials: the exec plugin failed, or a token file cannot be read. */
export class KubeCredentialsError extends DrainguardError {
  override name = 'KubeCredentialsError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('DG_KUBE_CREDENTIALS', message, options);
  }
}

/** Exec plugins that print nothing in this time are given up (kubectl waits forever; a stop cannot). */
const EXEC_TIMEOUT_MS = 30_000;
/** An ExecCredential is used until this long before it expires. */
const EXPIRY_MARGIN_MS = 10_000;

export function credentialsOf(user: KubeconfigUser, cluster: KubeconfigCluster, env: NodeJS.ProcessEnv): Credentials {
  const fixed = impersonationHeaders(user.impersonate);
  const tokenFile = user.tokenFile ? new TokenFile(user.tokenFile) : undefined;
  const exec = user.exec ? new ExecCredentials(user.exec, cluster, env) : undefined;
  return {
    async current() {
      const got: Partial<ExecResult> = exec ? await exec.current() : {};
      const token = got.token ?? tokenFile?.read() ?? user.token;
      return {
        headers: token ? { ...fixed, authorization: `Bearer ${token}` } : fixed,
        cert: got.cert ?? user.cert,
        key: got.key ?? user.key,
      };
    },
    refresh: () => (exec?.refresh() ?? false) || (tokenFile?.refresh() ?? false),
  };
}

/** The pod's projected service account token. */
export function tokenFileCredentials(path: string): Credentials {
  const file = new TokenFile(path);
  return {
    current: async () => ({ headers: { authorization: `Bearer ${file.read()}` } }),
    refresh: () => file.refresh(),
  };
}

/** A token in a file, read again whenever the file changed (the kubelet replaces it before it expires). */
class TokenFile {
  readonly #path: string;
  #token = '';
  #stamp = '';

  constructor(path: string) {
    this.#path = path;
  }

  read(): string {
    try {
      const st = statSync(this.#path);
      const stamp = `${st.ino}:${st.mtimeMs}:${st.size}`;
      if (stamp !== this.#stamp) {
        this.#token = readFileSync(this.#path, 'utf8').trim();
        this.#stamp = stamp;
      }
    } catch (err) {
      throw new KubeCredentialsError(
        `cannot read the token file ${this.#path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        { cause: err },
      );
    }
    return this.#token;
  }

  refresh(): boolean {
    this.#stamp = '';
    return true;
  }
}

interface ExecResult {
  readonly token?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly expiresAt: number;
}

class ExecCredentials {
  readonly #plugin: ExecPlugin;
  readonly #cluster: KubeconfigCluster;
  readonly #env: NodeJS.ProcessEnv;
  #result?: ExecResult;
  /** The run under way: callers at the same moment share it. */
  #running?: Promise<ExecResult>;

  constructor(plugin: ExecPlugin, cluster: KubeconfigCluster, env: NodeJS.ProcessEnv) {
    this.#plugin = plugin;
    this.#cluster = cluster;
    this.#env = env;
  }

  current(): Promise<ExecResult> {
    const result = this.#result;
    if (result && Date.now() < result.expiresAt - EXPIRY_MARGIN_MS) return Promise.resolve(result);
    return (this.#running ??= this.#run()
      .then((r) => (this.#result = r))
      .finally(() => (this.#running = undefined)));
  }

  refresh(): boolean {
    this.#result = undefined;
    return true;
  }

  #run(): Promise<ExecResult> {
    const p = this.#plugin;
    // A command with a path separator is relative to the kubeconfig; a bare name is looked up on PATH.
    const command = p.command.includes('/') && !isAbsolute(p.command) ? resolve(p.dir, p.command) : p.command;
    const info = {
      apiVersion: p.apiVersion,
      kind: 'ExecCredential',
      spec: {
        interactive: false,
        ...(p.provideClusterInfo && {
          cluster: {
            server: this.#cluster.server,
            'tls-server-name': this.#cluster.tlsServerName,
            'insecure-skip-tls-verify': this.#cluster.insecureSkipTlsVerify,
            'certificate-authority-data': this.#cluster.ca && Buffer.from(this.#cluster.ca).toString('base64'),
            'proxy-url': this.#cluster.proxyUrl,
          },
        }),
      },
    };
    const env = { ...this.#env, ...p.env, KUBERNETES_EXEC_INFO: JSON.stringify(info) };
    const what = `the kubeconfig's exec plugin ${p.command}`;
    return new Promise((resolvePromise, reject) => {
      execFile(command, [...p.args], { env, timeout: EXEC_TIMEOUT_MS, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
        if (err) {
          const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: string | number };
          const detail =
            e.code === 'ENOENT'
              ? `not found${p.installHint ? `: ${p.installHint.trim()}` : ''}`
              : e.killed
                ? `printed no credential within ${EXEC_TIMEOUT_MS / 1000} s`
                : `failed (${typeof e.code === 'number' ? `exit ${e.code}` : (e.code ?? e.message)})` +
                  (stderr.trim() ? `: ${stderr.trim().split('\n').slice(-3).join(' ')}` : '');
          reject(new KubeCredentialsError(`${what} ${detail}`, { cause: err }));
          return;
        }
        try {
          resolvePromise(parseExecCredential(stdout, p.apiVersion));
        } catch (parseErr) {
          reject(new KubeCredentialsError(`${what} printed no usable ExecCredential: ${(parseErr as Error).message}`, { cause: parseErr }));
        }
      });
    });
  }
}

function parseExecCredential(stdout: string, apiVersion: string): ExecResult {
  const cred = JSON.parse(stdout);
  if (cred?.kind !== 'ExecCredential') throw new KubeCredentialsError(`kind is ${JSON.stringify(cred?.kind)}, not ExecCredential`);
  if (cred.apiVersion !== apiVersion)
    throw new KubeCredentialsError(`apiVersion ${cred.apiVersion} differs from the kubeconfig's ${apiVersion}`);
  const s = cred.status ?? {};
  const token = typeof s.token === 'string' && s.token !== '' ? s.token : undefined;
  const cert = typeof s.clientCertificateData === 'string' && s.clientCertificateData !== '' ? s.clientCertificateData : undefined;
  const key = typeof s.clientKeyData === 'string' && s.clientKeyData !== '' ? s.clientKeyData : undefined;
  if ((cert === undefined) !== (key === undefined))
    throw new KubeCredentialsError('status has a client certificate or key without the other');
  if (!token && !cert) throw new KubeCredentialsError('status has neither a token nor a client certificate');
  const expiresAt = s.expirationTimestamp ? Date.parse(s.expirationTimestamp) : Infinity;
  if (Number.isNaN(expiresAt)) throw new KubeCredentialsError(`expirationTimestamp ${s.expirationTimestamp} is not a time`);
  return { token, cert, key, expiresAt };
}

/** As client-go sends them: one header line per group and per extra value. */
function impersonationHeaders(as: KubeconfigUser['impersonate']): Record<string, string | string[]> {
  if (!as) return {};
  const headers: Record<string, string | string[]> = {};
  if (as.user) headers['impersonate-user'] = as.user;
  if (as.uid) headers['impersonate-uid'] = as.uid;
  if (as.groups.length > 0) headers['impersonate-group'] = [...as.groups];
  for (const [k, values] of Object.entries(as.extra)) headers[`impersonate-extra-${encodeURIComponent(k)}`] = [...values];
  return headers;
}
