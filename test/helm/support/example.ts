// The example operator's chart (deploy/helm/example-operator) as the kubelet
// stand-in runs it: its images as processes (the operator's, test/fixtures/cr-operator.ts),
// and what a release of it leaves.
// For test/helm/uninstall.test.ts and test/tooling/bench/release-race.ts --helm.

import { resolve } from 'node:path';
import type { TestCluster } from '../../support/cluster/index.ts';
import { CR_OPERATOR } from '../../support/cr-operator.ts';
import type { ContainerRun } from '../../support/kubelet/index.ts';
import { NODE } from '../../support/proc.ts';

const EXE = resolve('dist/drainguard');
export const GROUP = '/apis/operator.example.io/v1';
export const RBAC = '/apis/rbac.authorization.k8s.io/v1';
export const HOLDER = 'drainguard.dev/holder-';

const isDrainguard = (path: string | undefined) => path !== undefined && /(^|\/)drainguard$/.test(path);

/**
 * Images to processes. drainguard's image: the built executable (its entrypoint
 * is drainguard). The operator's: the fixture operator, behind the drainguard
 * that `install` copied into the pod when its command is /drainguard/drainguard
 * (wrap); its preStop hook runs that copy as it stands. `env` goes to the
 * fixture operator (FIXTURE_FINALIZE_AFTER_MS, ...).
 */
export function exampleImages(env: NodeJS.ProcessEnv = {}) {
  return {
    'ghcr.io/drainguard/drainguard': (run: ContainerRun) => {
      const args = run.container.command ? run.argv.slice(1) : [...run.argv];
      // The stand-in maps the paths it sees in env and args; the sidecar's default
      // socket, /run/drainguard/drain.sock, appears in neither, so it is named here.
      const dir = args[0] === 'sidecar' && !run.env.DRAINGUARD_SOCKET ? run.hostPath('/run/drainguard') : undefined;
      return { file: EXE, args, ...(dir && { env: { ...run.env, DRAINGUARD_SOCKET: `${dir}/drain.sock` } }) };
    },
    'example.com/example-operator': (run: ContainerRun) => {
      if (run.hook) return undefined;
      if (isDrainguard(run.container.command?.[0])) {
        const sep = run.argv.indexOf('--');
        return { file: run.argv[0]!, args: [...run.argv.slice(1, sep + 1), NODE, CR_OPERATOR], env, probes: false };
      }
      return { file: NODE, args: [CR_OPERATOR], env, probes: false };
    },
  };
}

export const images = exampleImages();

/** The RBAC objects of a release in `ns`: the operator's, the ServiceAccount, drainguard's own. */
export function releaseRbac(ns: string): string[] {
  const own = `drainguard:${ns}:example-operator`;
  return [
    `${RBAC}/clusterroles/example-operator`,
    `${RBAC}/clusterrolebindings/example-operator`,
    `${RBAC}/clusterroles/${own}`,
    `${RBAC}/clusterrolebindings/${own}`,
    `${RBAC}/namespaces/${ns}/roles/${own}`,
    `${RBAC}/namespaces/${ns}/rolebindings/${own}`,
    `/api/v1/namespaces/${ns}/serviceaccounts/example-operator`,
  ];
}

export const holdersOf = (o: any): string[] => (o?.metadata.finalizers ?? []).filter((f: string) => f.startsWith(HOLDER));

/** What a failed release may hold: finalizers stripped (the custom resources' too) and the objects deleted. */
export async function strip(cluster: TestCluster, ns: string): Promise<void> {
  for (const plural of ['installations', 'apiservers']) {
    const path = `${GROUP}/${plural}/default`;
    if (await cluster.api.get(path)) {
      await cluster.api.patch(path, { metadata: { finalizers: null } });
      await cluster.api.delete(path);
      await cluster.waitFor(async () => !(await cluster.api.get(path)), 30_000, `${path} gone`);
    }
  }
  for (const path of releaseRbac(ns)) {
    if (await cluster.api.get(path)) {
      await cluster.api.patch(path, { metadata: { finalizers: null } });
      await cluster.api.delete(path);
    }
  }
}
