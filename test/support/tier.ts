// What this machine lets the tests check: the real control plane when one can
// be started (test/support/cluster/binaries.ts), else the stand-in
// (test/support/apiserver), which its contract suite holds to the real one.
// test/run.ts decides once per run and hands the answer to every file in
// TEST_CLUSTER_TIER; a file started some other way decides for itself. A test
// the stand-in cannot honestly serve is registered through realOnly(): on the
// stand-in it is skipped, with its reason, and uvu counts it as skipped.
//
// `node test/support/tier.ts` prints the tier (.ci/run does, before the tests).

import type { Test } from 'uvu';
import { dirname } from 'node:path';
import { apiserverVersion, etcdVersion, locateBinaries } from './cluster/binaries.ts';

export const TIER_VARIABLE = 'TEST_CLUSTER_TIER';

export type ClusterTier =
  | { readonly kind: 'real'; readonly description: string }
  | { readonly kind: 'stand-in'; readonly description: string };

/** The tier ENV gives: its KUBEBUILDER_ASSETS, else the pinned release's cache, else the stand-in. */
export function detectTier(env: NodeJS.ProcessEnv = process.env): ClusterTier {
  const found = locateBinaries(env);
  if ('missing' in found) return { kind: 'stand-in', description: `stand-in control plane (test/support/apiserver, held to the real one by its contract suite): no real one here, ${found.missing}` };
  return { kind: 'real', description: `real control plane: ${apiserverVersion(found)} from ${dirname(found.apiserver)}, etcd ${etcdVersion(found)}` };
}

let tier: ClusterTier | undefined;

/** The run's tier: as the runner found it, else found now. */
export function clusterTier(): ClusterTier {
  if (tier) return tier;
  const given = process.env[TIER_VARIABLE];
  tier = given ? (JSON.parse(given) as ClusterTier) : detectTier();
  return tier;
}

/** Registers `fn` as test `name` on the real control plane; on the stand-in skips it, saying why. */
export function realOnly(test: Test, name: string, reason: string, fn: () => Promise<void>): void {
  if (clusterTier().kind === 'real') {
    test(name, fn);
    return;
  }
  test.skip(name, fn);
  process.stdout.write(`skip: ${JSON.stringify(name)}: needs the real control plane: ${reason}\n`);
}

if (import.meta.main) process.stdout.write(`${clusterTier().description}\n`);
