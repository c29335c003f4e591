// drainguard's own RBAC for an operator's Deployment, as deploy/components/rbac
// renders it (`kubectl kustomize`), so that a test grants drainguard exactly
// what an install grants it, and a change to the component reaches the tests.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

const COMPONENT = resolve('deploy/components/rbac');

export interface RbacFor {
  /** The operator's Deployment: its namespace, name and ServiceAccount. */
  readonly namespace: string;
  readonly deployment: string;
  readonly serviceAccount: string;
  /** The operator's ClusterRole and ClusterRoleBinding, which drainguard keeps alive. */
  readonly clusterRole: string;
  readonly clusterRoleBinding: string;
}

export interface RbacObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
}

/** The ClusterRole, ClusterRoleBinding, Role and RoleBinding (one name, `drainguard:NAMESPACE:DEPLOYMENT`), in the order rendered. */
export function drainguardRbac(o: RbacFor): RbacObject[] {
  const dir = mkdtempSync(join(tmpdir(), 'drainguard-rbac-'));
  try {
    // The two inputs the component reads: the Deployment, and the local-config ConfigMap `drainguard`.
    const inputs = [
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: o.deployment, namespace: o.namespace },
        spec: { template: { spec: { serviceAccountName: o.serviceAccount, containers: [] } } },
      },
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'drainguard', annotations: { 'config.kubernetes.io/local-config': 'true' } },
        data: { serviceAccount: o.serviceAccount, clusterRole: o.clusterRole, clusterRoleBinding: o.clusterRoleBinding },
      },
    ];
    writeFileSync(join(dir, 'inputs.yaml'), inputs.map((x) => JSON.stringify(x)).join('\n---\n'));
    // kustomize takes a component by relative path only.
    const kustomization = {
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      resources: ['inputs.yaml'],
      components: [relative(dir, COMPONENT)],
    };
    writeFileSync(join(dir, 'kustomization.yaml'), JSON.stringify(kustomization));
    const text = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return parseAllDocuments(text)
      .map((d) => d.toJS() as RbacObject)
      .filter((x) => x.apiVersion === 'rbac.authorization.k8s.io/v1');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
