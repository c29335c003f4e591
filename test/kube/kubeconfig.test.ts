// drainguard's own kubeconfig reader and credentials against the real API
// server: what the server says drainguard is (a SelfSubjectReview) for each
// way a kubeconfig can say it: several files merged, relative paths, exec
// plugins (cached, run again after a 401), impersonation, the server name and
// proxies; and the messages for what it cannot use.
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { KubeClient } from '../../src/kube/client.ts';
import { loadApiAccess } from '../../src/kube/config.ts';
import { KubeCredentialsError } from '../../src/kube/credentials.ts';
import { KubeUnreachableError } from '../../src/kube/errors.ts';
import { useCluster } from '../support/cluster/index.ts';
import { onFileEnd } from '../support/file-end.ts';
import { tempDir } from '../support/proc.ts';

const cluster = await useCluster();
const { name: NS } = await cluster.namespace('kubeconfig');
await cluster.serviceAccount(NS, 'op');
const opToken = await cluster.token(NS, 'op');
const OP = `system:serviceaccount:${NS}:op`;
const caData = Buffer.from(cluster.ca).toString('base64');

/** Who the API server says the caller is. */
async function whoAmI(
  client: KubeClient | Promise<KubeClient>,
): Promise<{ username: string; groups: string[]; extra?: Record<string, string[]> }> {
  const review = await (
    await client
  ).request<any>('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  return review.status.userInfo;
}

const clientOf = async (files: string[], env: NodeJS.ProcessEnv = {}) =>
  new KubeClient({
    access: await loadApiAccess({ KUBECONFIG: files.join(':'), ...env }, { home: tempDir() }),
    retry: { baseDelayMs: 1, maxDelayMs: 1, maxAttempts: 1 },
  });

function kubeconfig(dir: string, name: string, doc: { cluster?: string; user?: string; context?: string; current?: string }): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
${doc.current === undefined ? '' : `current-context: ${doc.current}\n`}${section('clusters', doc.cluster)}
${section('users', doc.user)}
${section('contexts', doc.context)}
`,
  );
  return path;
}

const section = (key: string, items?: string) => (items ? `${key}:\n${items}` : `${key}: []`);
const clusterEntry = (name: string, extra = '', server = cluster.url) => `- name: ${name}\n  cluster:\n    server: ${server}\n${extra}`;
const context = (name: string, c: string, u: string) => `- name: ${name}\n  context:\n    cluster: ${c}\n    user: ${u}\n`;

test('KUBECONFIG of several files: the first to name an entry or a current context wins; paths are relative to their file', async () => {
  const dir = tempDir();
  mkdirSync(join(dir, 'a', 'pki'), { recursive: true });
  mkdirSync(join(dir, 'b'));
  copyFileSync(cluster.caFile, join(dir, 'a', 'pki', 'ca.crt'));
  copyFileSync(cluster.state.adminCert, join(dir, 'a', 'pki', 'admin.crt'));
  copyFileSync(cluster.state.adminKey, join(dir, 'a', 'pki', 'admin.key'));
  // a: the admin by client certificate files next to it, and the current context.
  const a = kubeconfig(join(dir, 'a'), 'config', {
    cluster: clusterEntry('c', '    certificate-authority: pki/ca.crt\n'),
    user: '- name: admin\n  user:\n    client-certificate: pki/admin.crt\n    client-key: pki/admin.key\n',
    context: context('main', 'c', 'admin'),
    current: 'main',
  });
  // b: another "admin" (the op token) and another current context: both lose to a.
  const b = kubeconfig(join(dir, 'b'), 'config', {
    cluster: clusterEntry('c', `    certificate-authority-data: ${caData}\n`, 'https://127.0.0.1:1'),
    user: `- name: admin\n  user:\n    token: ${opToken}\n- name: op\n  user:\n    token: ${opToken}\n`,
    context: `${context('main', 'c', 'op')}${context('other', 'c', 'op')}    namespace: ${NS}\n`,
    current: 'other',
  });
  const me = await whoAmI(clientOf([b.replace('b/config', 'missing'), a, b]));
  // Only the admin's client certificate is of system:masters.
  assert.ok(me.username !== OP && me.groups.includes('system:masters'), JSON.stringify(me));
  // b alone: its own context, its token.
  const access = await loadApiAccess({ KUBECONFIG: b }, { home: dir });
  assert.equal([access.server, access.namespace], ['https://127.0.0.1:1', NS]);
});

test('an exec plugin: its ExecCredential is used until it expires, and it is run again after a 401', async () => {
  const dir = tempDir();
  const runs = join(dir, 'runs');
  // Prints a token the server does not know first, then the ServiceAccount's; logs each run's KUBERNETES_EXEC_INFO.
  writeFileSync(
    join(dir, 'plugin.sh'),
    `#!/bin/sh
echo "$KUBERNETES_EXEC_INFO" >> "${runs}"
n=$(wc -l < "${runs}")
if [ "$n" = 1 ]; then token=not-a-token; else token="$OP_TOKEN"; fi
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"2099-01-01T00:00:00Z"}}' "$token"
`,
  );
  chmodSync(join(dir, 'plugin.sh'), 0o755);
  const file = kubeconfig(dir, 'config', {
    cluster: clusterEntry('c', `    certificate-authority-data: ${caData}\n`),
    user: `- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ./plugin.sh\n      interactiveMode: Never\n      provideClusterInfo: true\n      env:\n      - name: OP_TOKEN\n        value: ${opToken}\n`,
    context: context('main', 'c', 'u'),
    current: 'main',
  });
  const client = clientOf([file]);
  assert.equal((await whoAmI(client)).username, OP);
  assert.equal((await whoAmI(client)).username, OP);
  const infos = readFileSync(runs, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(infos.length, 2, 'run once for the refused token, once more after the 401, then cached');
  assert.equal(infos[0].kind, 'ExecCredential');
  assert.equal(infos[0].spec.interactive, false);
  assert.equal(infos[0].spec.cluster.server, cluster.url);
});

test('an exec plugin that fails, is missing or prints nonsense: the call fails naming the plugin and why', async () => {
  const dir = tempDir();
  const withPlugin = (command: string, extra = '') =>
    clientOf([
      kubeconfig(dir, `config-${Math.random().toString(36).slice(2)}`, {
        cluster: clusterEntry('c', `    certificate-authority-data: ${caData}\n`),
        user: `- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: ${command}\n${extra}`,
        context: context('main', 'c', 'u'),
        current: 'main',
      }),
    ]);
  writeFileSync(join(dir, 'fails.sh'), '#!/bin/sh\necho "token expired, log in again" >&2\nexit 3\n');
  writeFileSync(join(dir, 'nonsense.sh'), '#!/bin/sh\necho "{}"\n');
  chmodSync(join(dir, 'fails.sh'), 0o755);
  chmodSync(join(dir, 'nonsense.sh'), 0o755);
  const failed = await whoAmI(withPlugin(join(dir, 'fails.sh'))).catch((e) => e);
  assert.instance(failed, KubeCredentialsError);
  assert.match(
    failed.message,
    `POST /apis/authentication.k8s.io/v1/selfsubjectreviews on ${cluster.url}: the kubeconfig's exec plugin ${join(dir, 'fails.sh')} failed (exit 3): token expired, log in again`,
  );
  assert.equal(failed.code, 'DG_KUBE_CREDENTIALS');
  const missing = await whoAmI(withPlugin('drainguard-no-such-plugin', '      installHint: install it with your package manager\n')).catch(
    (e) => e,
  );
  assert.match(missing.message, 'exec plugin drainguard-no-such-plugin not found: install it with your package manager');
  const nonsense = await whoAmI(withPlugin(join(dir, 'nonsense.sh'))).catch((e) => e);
  assert.match(nonsense.message, 'printed no usable ExecCredential: kind is undefined, not ExecCredential');
});

test('impersonation: as, as-groups and as-user-extra reach the server as client-go sends them', async () => {
  const dir = tempDir();
  const file = kubeconfig(dir, 'config', {
    cluster: clusterEntry('c', `    certificate-authority-data: ${caData}\n`),
    user: `- name: u\n  user:\n    client-certificate: ${cluster.state.adminCert}\n    client-key: ${cluster.state.adminKey}\n    as: someone\n    as-groups: [team-a, team-b]\n    as-user-extra:\n      reason: [testing, again]\n`,
    context: context('main', 'c', 'u'),
    current: 'main',
  });
  const me = await whoAmI(clientOf([file]));
  assert.equal(me.username, 'someone');
  assert.ok(me.groups.includes('team-a') && me.groups.includes('team-b'), JSON.stringify(me));
  assert.equal(me.extra?.reason, ['testing', 'again']);
});

test('tls-server-name is the name the serving certificate is checked against; insecure-skip-tls-verify checks none', async () => {
  const dir = tempDir();
  const user = `- name: u\n  user:\n    token: ${opToken}\n`;
  const withCluster = (name: string, extra: string) =>
    clientOf([kubeconfig(dir, name, { cluster: clusterEntry('c', extra), user, context: context('main', 'c', 'u'), current: 'main' })]);
  assert.equal(
    (await whoAmI(withCluster('named', `    certificate-authority-data: ${caData}\n    tls-server-name: kubernetes.default.svc\n`)))
      .username,
    OP,
  );
  const wrong = await whoAmI(
    withCluster('wrong', `    certificate-authority-data: ${caData}\n    tls-server-name: not-the-api.example\n`),
  ).catch((e) => e);
  assert.instance(wrong, KubeUnreachableError);
  assert.match(wrong.message, 'ERR_TLS_CERT_ALTNAME_INVALID');
  const untrusted = await whoAmI(withCluster('no-ca', '')).catch((e) => e);
  assert.instance(untrusted, KubeUnreachableError, 'the system roots do not hold the cluster CA');
  assert.equal((await whoAmI(withCluster('skip', '    insecure-skip-tls-verify: true\n'))).username, OP);
});

test('proxy-url, else HTTPS_PROXY (with NO_PROXY) of the environment: the API server is reached through the proxy', async () => {
  const proxy = await connectProxy();
  const dir = tempDir();
  const user = `- name: u\n  user:\n    token: ${opToken}\n`;
  const target = new URL(cluster.url).host;
  const via = clientOf([
    kubeconfig(dir, 'proxied', {
      cluster: clusterEntry('c', `    certificate-authority-data: ${caData}\n    proxy-url: ${proxy.url}\n`),
      user,
      context: context('main', 'c', 'u'),
      current: 'main',
    }),
  ]);
  assert.equal((await whoAmI(via)).username, OP);
  assert.equal(proxy.tunnels, [target]);
  const plain = kubeconfig(dir, 'plain', {
    cluster: clusterEntry('c', `    certificate-authority-data: ${caData}\n`),
    user,
    context: context('main', 'c', 'u'),
    current: 'main',
  });
  assert.equal((await whoAmI(clientOf([plain], { HTTPS_PROXY: proxy.url }))).username, OP);
  assert.equal(proxy.tunnels, [target, target]);
  assert.equal((await whoAmI(clientOf([plain], { HTTPS_PROXY: proxy.url, NO_PROXY: '127.0.0.1' }))).username, OP);
  assert.equal(proxy.tunnels, [target, target], 'NO_PROXY: straight to the server');
  await rejects(
    loadApiAccess(
      {
        KUBECONFIG: kubeconfig(dir, 'socks', {
          cluster: clusterEntry('c', '    proxy-url: socks5://127.0.0.1:1080\n'),
          user,
          context: context('main', 'c', 'u'),
          current: 'main',
        }),
      },
      { home: dir },
    ),
    /proxy-url socks5:\/\/127.0.0.1:1080: drainguard goes through http:\/\/ and https:\/\/ proxies \(CONNECT\), not socks5/,
  );
});

test('what drainguard cannot use is refused by name', async () => {
  const dir = tempDir();
  const load = (name: string, doc: Parameters<typeof kubeconfig>[2]) =>
    loadApiAccess({ KUBECONFIG: kubeconfig(dir, name, doc) }, { home: dir });
  const c = clusterEntry('c', `    certificate-authority-data: ${caData}\n`);
  await rejects(load('none', { cluster: c, context: context('main', 'c', 'u') }), /no current context with a cluster/);
  await rejects(
    load('undefined', { cluster: c, context: context('main', 'c', 'u'), current: 'other' }),
    /the current context "other" is not defined/,
  );
  await rejects(
    load('no-user', { cluster: c, context: context('main', 'c', 'u'), current: 'main' }),
    /the context "main" names the user "u", which is not defined/,
  );
  await rejects(
    load('oidc', {
      cluster: c,
      user: '- name: u\n  user:\n    auth-provider:\n      name: oidc\n',
      context: context('main', 'c', 'u'),
      current: 'main',
    }),
    /auth-provider "oidc" was removed from Kubernetes clients; use the provider's exec plugin/,
  );
  await rejects(
    load('basic', {
      cluster: c,
      user: '- name: u\n  user:\n    username: a\n    password: b\n',
      context: context('main', 'c', 'u'),
      current: 'main',
    }),
    /basic authentication \(removed in 1.19\)/,
  );
  await rejects(
    load('half', {
      cluster: c,
      user: `- name: u\n  user:\n    client-certificate: ${cluster.state.adminCert}\n`,
      context: context('main', 'c', 'u'),
      current: 'main',
    }),
    /a client certificate but no key/,
  );
  await rejects(
    load('ftp', {
      cluster: clusterEntry('c', '', 'ftp://x'),
      user: '- name: u\n  user: {}\n',
      context: context('main', 'c', 'u'),
      current: 'main',
    }),
    /must be https:\/\/ or http:\/\//,
  );
  writeFileSync(join(dir, 'bad'), 'clusters: [\n');
  await rejects(loadApiAccess({ KUBECONFIG: join(dir, 'bad') }, { home: dir }), /bad is not valid YAML/);
});

test('a token file in the kubeconfig is read again when it changes; a 401 with a stale one reads it anew', async () => {
  const dir = tempDir();
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, opToken);
  const file = kubeconfig(dir, 'config', {
    cluster: clusterEntry('c', `    certificate-authority-data: ${caData}\n`),
    user: '- name: u\n  user:\n    tokenFile: token\n',
    context: context('main', 'c', 'u'),
    current: 'main',
  });
  const client = clientOf([file]);
  assert.equal((await whoAmI(client)).username, OP);
  await cluster.serviceAccount(NS, 'other');
  writeFileSync(tokenFile, await cluster.token(NS, 'other'));
  assert.equal((await whoAmI(client)).username, `system:serviceaccount:${NS}:other`);
});

async function rejects(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(
    err instanceof Error && pattern.test(err.message),
    `expected a rejection matching ${pattern}, got ${err instanceof Error ? err.message : 'none'}`,
  );
}

/** An HTTP CONNECT proxy, recording the host:port of each tunnel. */
async function connectProxy(): Promise<{ url: string; tunnels: string[] }> {
  const tunnels: string[] = [];
  const open = new Set<{ destroy(): void }>();
  const server = createServer((_req, res) => res.writeHead(405).end());
  server.on('connect', (req, socket, head) => {
    tunnels.push(req.url!);
    open.add(socket);
    const [host, port] = req.url!.split(':');
    const upstream = connect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(socket).pipe(upstream);
    });
    open.add(upstream);
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onFileEnd(async () => {
    for (const s of open) s.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, tunnels };
}

test.run();
