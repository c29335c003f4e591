// Points clients at a fake API server: a kubeconfig file (for KUBECONFIG), or
// the files and variables of an in-cluster service account.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FakeApiServer } from './server.ts';

/** Writes a kubeconfig for `server` with `token` into `dir`; returns its path. */
export function writeKubeconfig(dir: string, server: FakeApiServer, token: string, name = 'kubeconfig'): string {
  const path = join(dir, name);
  const cluster = server.tls
    ? `    certificate-authority-data: ${Buffer.from(server.ca).toString('base64')}`
    : // client-node refuses plain HTTP unless TLS verification is switched off.
      '    insecure-skip-tls-verify: true';
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: ${server.url}
${cluster}
users:
- name: test
  user:
    token: ${token}
contexts:
- name: test
  context:
    cluster: test
    user: test
current-context: test
`,
    { mode: 0o600 },
  );
  return path;
}

/**
 * Writes token, ca.crt and namespace as Kubernetes mounts them for a pod's
 * service account into `dir`; returns the variables an in-cluster client reads.
 */
export function writeServiceAccountFiles(dir: string, server: FakeApiServer, token: string, namespace: string): NodeJS.ProcessEnv {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'token'), token);
  writeFileSync(join(dir, 'ca.crt'), server.ca);
  writeFileSync(join(dir, 'namespace'), namespace);
  return { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(server.port) };
}
