// The host side of a pod, made before its first container starts: a temp
// directory per volume, a free loopback port per declared containerPort, and
// a kubeconfig with a token bound to the pod (TokenRequest), never refreshed.

import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Api } from './api.ts';
import type { PodHost } from './container.ts';

const TOKEN_SECONDS = 3600;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function podToken(api: Api, pod: any): Promise<string> {
  const sa = pod.spec.serviceAccountName ?? 'default';
  const body = await api.must('POST', `/api/v1/namespaces/${pod.metadata.namespace}/serviceaccounts/${sa}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: {
      expirationSeconds: TOKEN_SECONDS,
      boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name, uid: pod.metadata.uid },
    },
  });
  return body.status.token as string;
}

function kubeconfig(api: Api, token: string, namespace: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'cluster', cluster: { server: api.server, 'certificate-authority-data': Buffer.from(api.ca).toString('base64') } }],
    users: [{ name: 'pod', user: { token } }],
    contexts: [{ name: 'pod', context: { cluster: 'cluster', user: 'pod', namespace } }],
    'current-context': 'pod',
  });
}

function writeFiles(dir: string, files: Record<string, string | Buffer>): void {
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), content, { mode: 0o644 });
  }
}

async function dataOf(
  api: Api,
  ns: string,
  kind: 'configmaps' | 'secrets',
  name: string,
  items?: { key: string; path: string }[],
  optional?: boolean,
): Promise<Record<string, string | Buffer>> {
  const r = await api.call('GET', `/api/v1/namespaces/${ns}/${kind}/${name}`);
  if (r.status !== 200) {
    if (optional) return {};
    throw new Error(`volume from ${kind}/${name}: ${r.status}`);
  }
  const data: Record<string, string | Buffer> = {};
  for (const [k, v] of Object.entries<string>(r.body.data ?? {})) data[k] = kind === 'secrets' ? Buffer.from(v, 'base64') : v;
  if (!items) return data;
  return Object.fromEntries(items.filter((i) => i.key in data).map((i) => [i.path, data[i.key]!]));
}

async function volumeFiles(
  api: Api,
  pod: any,
  volume: any,
  token: () => Promise<string>,
): Promise<Record<string, string | Buffer> | undefined> {
  const ns = pod.metadata.namespace;
  if (volume.emptyDir) return {};
  if (volume.configMap) return dataOf(api, ns, 'configmaps', volume.configMap.name, volume.configMap.items, volume.configMap.optional);
  if (volume.secret) return dataOf(api, ns, 'secrets', volume.secret.secretName, volume.secret.items, volume.secret.optional);
  if (volume.projected) {
    const files: Record<string, string | Buffer> = {};
    for (const s of volume.projected.sources ?? []) {
      if (s.serviceAccountToken) files[s.serviceAccountToken.path] = await token();
      else if (s.configMap)
        Object.assign(files, await dataOf(api, ns, 'configmaps', s.configMap.name, s.configMap.items, s.configMap.optional));
      else if (s.secret) Object.assign(files, await dataOf(api, ns, 'secrets', s.secret.name, s.secret.items, s.secret.optional));
      else if (s.downwardAPI) {
        for (const item of s.downwardAPI.items ?? []) if (item.fieldRef?.fieldPath === 'metadata.namespace') files[item.path] = ns;
      }
    }
    return files;
  }
  return undefined;
}

/** Makes the pod's directory, volumes, ports and kubeconfig. */
export async function makePodHost(api: Api, pod: any, podIP: string): Promise<PodHost> {
  // A container sees its mountPath, here the host path, and a socket in a volume
  // must fit the Unix limit of 107 bytes: with the pod's name in this directory,
  // a Deployment's pod had 113 under the test runner's TMPDIR.
  const dir = mkdtempSync(join(tmpdir(), 'pod-'));
  let cached: string | undefined;
  const token = async () => (cached ??= await podToken(api, pod));
  const volumes = new Map<string, string>();
  for (const volume of pod.spec.volumes ?? []) {
    const files = await volumeFiles(api, pod, volume, token);
    if (files === undefined) continue; // a kind the stand-in does not support: mounting it fails the container
    const path = join(dir, 'volumes', volume.name);
    mkdirSync(path, { recursive: true });
    writeFiles(path, files);
    volumes.set(volume.name, path);
  }
  const ports = new Map<number, number>();
  const containers = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  for (const c of containers) for (const p of c.ports ?? []) if (!ports.has(p.containerPort)) ports.set(p.containerPort, await freePort());
  let config: string | undefined;
  if (pod.spec.automountServiceAccountToken !== false) {
    config = join(dir, 'kubeconfig');
    writeFileSync(config, kubeconfig(api, await token(), pod.metadata.namespace), { mode: 0o600 });
  }
  return { dir, volumes, ports, kubeconfig: config, podIP };
}
