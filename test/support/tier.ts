// Whether this machine gives the tests a control plane
// (test/support/cluster/binaries.ts): the release KUBEBUILDER_ASSETS names,
// else the one test/support/kubernetes pins, once `npm run k8s` has built it.
// test/run.ts decides once per run and hands the answer to every file in
// TEST_CLUSTER_TIER; without one, the files that need it are not run, each
// counted as a skip with the reason. There is no stand-in.
//
// `node test/support/tier.ts` prints it (.ci/run does, before the tests).

import { dirname } from 'node:path';
import { apiserverVersion, etcdVersion, locateBinaries } from './cluster/binaries.ts';

export const TIER_VARIABLE = 'TEST_CLUSTER_TIER';

export type ClusterTier = { readonly kind: 'real'; readonly description: string } | { readonly kind: 'none'; readonly description: string };

/** The tier ENV gives: its KUBEBUILDER_ASSETS, else the pinned release's cache. */
export function detectTier(env: NodeJS.ProcessEnv = process.env): ClusterTier {
  const found = locateBinaries(env);
  if ('missing' in found) return { kind: 'none', description: `no control plane: ${found.missing}` };
  return {
    kind: 'real',
    description: `real control plane: ${apiserverVersion(found)} from ${dirname(found.apiserver)}, etcd ${etcdVersion(found)}`,
  };
}

let tier: ClusterTier | undefined;

/** The run's tier: as the runner found it, else found now. */
export function clusterTier(): ClusterTier {
  if (tier) return tier;
  const given = process.env[TIER_VARIABLE];
  tier = given ? (JSON.parse(given) as ClusterTier) : detectTier();
  return tier;
}

if (import.meta.main) process.stdout.write(`${clusterTier().description}\n`);
