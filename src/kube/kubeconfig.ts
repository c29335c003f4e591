// The kubeconfig files named by KUBECONFIG (or ~/.kube/config), merged as
// kubectl merges them: the first file that names a cluster, user or context
// wins it, and the first current-context set is the one in force. Paths in a
// file are relative to that file's directory.

import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { ConfigError } from '../errors.ts';

/** The kubeconfig in force cannot be used: what is missing or malformed, and where. */
export class KubeconfigError extends ConfigError {
  override name = 'KubeconfigError';
  constructor(message: string, options?: ErrorOptions) {
    super('DG_CONFIG_NO_API', message, options);
  }
}

export interface KubeconfigCluster {
  readonly server: string;
  /** PEM of the CA bundle, from certificate-authority-data or the certificate-authority file. */
  readonly ca?: string;
  readonly insecureSkipTlsVerify: boolean;
  readonly tlsServerName?: string;
  readonly proxyUrl?: string;
}

export interface ExecPlugin {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly apiVersion: string;
  readonly installHint?: string;
  /** Where the command runs from when it is a relative path (the kubeconfig's directory). */
  readonly dir: string;
  readonly provideClusterInfo: boolean;
}

export interface KubeconfigUser {
  readonly token?: string;
  readonly tokenFile?: string;
  /** PEM, from client-certificate-data or the client-certificate file. */
  readonly cert?: string;
  readonly key?: string;
  readonly exec?: ExecPlugin;
  readonly impersonate?: {
    readonly user?: string;
    readonly uid?: string;
    readonly groups: readonly string[];
    readonly extra: Readonly<Record<string, readonly string[]>>;
  };
}

export interface Kubeconfig {
  readonly context: string;
  readonly cluster: KubeconfigCluster;
  readonly user: KubeconfigUser;
  readonly namespace?: string;
}

interface Named {
  readonly entry: Record<string, any>;
  /** The directory of the file that named it. */
  readonly dir: string;
}

/** The context in force across `files`, with its cluster and user resolved; throws naming what is missing or malformed. */
export async function readKubeconfig(files: readonly string[], source: string): Promise<Kubeconfig> {
  const clusters = new Map<string, Named>();
  const users = new Map<string, Named>();
  const contexts = new Map<string, Named>();
  let current: string | undefined;
  for (const file of files) {
    const doc = await parseFile(file);
    const dir = dirname(resolve(file));
    collect(doc.clusters, 'cluster', clusters, dir, file);
    collect(doc.users, 'user', users, dir, file);
    collect(doc.contexts, 'context', contexts, dir, file);
    if (current === undefined && typeof doc['current-context'] === 'string' && doc['current-context'] !== '')
      current = doc['current-context'];
  }
  if (current === undefined) throw new KubeconfigError(`${source}: no current context with a cluster`);
  const context = contexts.get(current)?.entry;
  if (!context) throw new KubeconfigError(`${source}: the current context "${current}" is not defined`);
  const cluster = context.cluster ? clusters.get(String(context.cluster)) : undefined;
  if (!cluster)
    throw new KubeconfigError(
      `${source}: the context "${current}" names no cluster that is defined${context.cluster ? ` ("${context.cluster}")` : ''}`,
    );
  const user = context.user ? users.get(String(context.user)) : undefined;
  if (context.user && !user)
    throw new KubeconfigError(`${source}: the context "${current}" names the user "${context.user}", which is not defined`);
  const where = `${source}: context "${current}"`;
  return {
    context: current,
    cluster: readCluster(cluster, where),
    user: user ? readUser(user, where) : {},
    namespace: typeof context.namespace === 'string' && context.namespace !== '' ? context.namespace : undefined,
  };
}

async function parseFile(file: string): Promise<Record<string, any>> {
  const text = readFileSync(file, 'utf8');
  // Loaded only here: a pod's in-cluster configuration needs no YAML parser, nor its heap.
  const { parse } = await import('yaml');
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new KubeconfigError(`${file} is not valid YAML: ${(err as Error).message.split('\n')[0]}`, { cause: err });
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new KubeconfigError(`${file} is not a kubeconfig (a mapping at the top)`);
  return doc as Record<string, any>;
}

function collect(list: unknown, key: string, into: Map<string, Named>, dir: string, file: string): void {
  if (list === undefined || list === null) return;
  if (!Array.isArray(list)) throw new KubeconfigError(`${file}: ${key}s is not a list`);
  for (const item of list) {
    const name = item?.name;
    if (typeof name !== 'string' || into.has(name)) continue;
    into.set(name, { entry: item?.[key] ?? {}, dir });
  }
}

function readCluster({ entry: c, dir }: Named, where: string): KubeconfigCluster {
  if (typeof c.server !== 'string' || c.server === '') throw new KubeconfigError(`${where}: the cluster has no server`);
  let url: URL;
  try {
    url = new URL(c.server);
  } catch {
    throw new KubeconfigError(`${where}: the cluster's server is not a URL: ${c.server}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new KubeconfigError(`${where}: the cluster's server must be https:// or http://, not ${c.server}`);
  const proxyUrl = optionalString(c['proxy-url']);
  if (proxyUrl !== undefined && !/^https?:\/\//.test(proxyUrl)) {
    throw new KubeconfigError(
      `${where}: proxy-url ${proxyUrl}: drainguard goes through http:// and https:// proxies (CONNECT), not ${proxyUrl.split(':')[0]}`,
    );
  }
  return {
    server: c.server,
    ca: pem(c, 'certificate-authority', dir, where),
    insecureSkipTlsVerify: c['insecure-skip-tls-verify'] === true,
    tlsServerName: optionalString(c['tls-server-name']),
    proxyUrl,
  };
}

function readUser({ entry: u, dir }: Named, where: string): KubeconfigUser {
  if (u['auth-provider']) {
    throw new KubeconfigError(
      `${where}: the user's auth-provider "${u['auth-provider'].name ?? '?'}" was removed from Kubernetes clients; ` +
        "use the provider's exec plugin (users[].user.exec), as kubectl does",
    );
  }
  if (u.username !== undefined || u.password !== undefined)
    throw new KubeconfigError(
      `${where}: the user has a username and password; Kubernetes no longer accepts basic authentication (removed in 1.19)`,
    );
  const cert = pem(u, 'client-certificate', dir, where);
  const key = pem(u, 'client-key', dir, where);
  if ((cert === undefined) !== (key === undefined))
    throw new KubeconfigError(`${where}: the user has a client ${cert ? 'certificate but no key' : 'key but no certificate'}`);
  const groups = u['as-groups'];
  const extra = u['as-user-extra'];
  return {
    token: optionalString(u.token),
    tokenFile: u.tokenFile ? relative(String(u.tokenFile), dir) : undefined,
    cert,
    key,
    exec: u.exec ? readExec(u.exec, dir, where) : undefined,
    impersonate:
      u.as || u['as-uid'] || groups || extra
        ? {
            user: optionalString(u.as),
            uid: optionalString(u['as-uid']),
            groups: Array.isArray(groups) ? groups.map(String) : [],
            extra:
              extra && typeof extra === 'object'
                ? Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, Array.isArray(v) ? v.map(String) : [String(v)]]))
                : {},
          }
        : undefined,
  };
}

function readExec(e: Record<string, any>, dir: string, where: string): ExecPlugin {
  if (typeof e.command !== 'string' || e.command === '') throw new KubeconfigError(`${where}: the user's exec plugin has no command`);
  const apiVersion = String(e.apiVersion ?? '');
  if (apiVersion !== 'client.authentication.k8s.io/v1' && apiVersion !== 'client.authentication.k8s.io/v1beta1') {
    throw new KubeconfigError(
      `${where}: the exec plugin's apiVersion must be client.authentication.k8s.io/v1 or v1beta1, not "${apiVersion}"`,
    );
  }
  const env: Record<string, string> = {};
  for (const { name, value } of Array.isArray(e.env) ? e.env : []) if (typeof name === 'string') env[name] = String(value ?? '');
  return {
    command: e.command,
    args: Array.isArray(e.args) ? e.args.map(String) : [],
    env,
    apiVersion,
    installHint: optionalString(e.installHint),
    dir,
    provideClusterInfo: e.provideClusterInfo === true,
  };
}

/** `NAME-data` (base64) or the file `NAME` (relative to the kubeconfig), as text. */
function pem(entry: Record<string, any>, name: string, dir: string, where: string): string | undefined {
  const data = optionalString(entry[`${name}-data`]);
  if (data !== undefined) return Buffer.from(data, 'base64').toString('utf8');
  const file = optionalString(entry[name]);
  if (file === undefined) return undefined;
  try {
    return readFileSync(relative(file, dir), 'utf8');
  } catch (err) {
    throw new KubeconfigError(`${where}: cannot read ${name} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, {
      cause: err,
    });
  }
}

const relative = (path: string, dir: string) => (isAbsolute(path) ? path : resolve(dir, path));
const optionalString = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
