// The control plane of the run's tier (test/support/tier.ts): the real
// binaries when KUBEBUILDER_ASSETS has them, else the stand-in. Both give the
// same ControlPlane: URL, PKI, admin kubeconfig, and the faults.

import { startStandIn } from '../apiserver/index.ts';
import { clusterTier } from '../tier.ts';
import { type ControlPlane, startControlPlane } from './control-plane.ts';

export function startTierControlPlane(): Promise<ControlPlane> {
  return clusterTier().kind === 'real' ? startControlPlane() : startStandIn();
}
