// The hold as `drainguard status` and `drainguard release` see it from outside
// the pod: the Deployments of a namespace that carry holder finalizers, and
// what a hold on them waits for (the listed kinds' objects still finalizing).

import type { HoldKind } from '../config/hold-list.ts';
import { holdKindName } from '../config/hold-list.ts';
import { type HeldTarget, holderOf } from '../guard/names.ts';
import type { KubeClient } from '../kube/client.ts';
import { RESOURCES } from '../kube/objects.ts';
import type { Finalizing } from './decide.ts';
import { FinalizingObjects } from './finalizing.ts';

/** The Deployments in `namespace` that carry a drainguard.dev/holder- finalizer. */
export async function heldDeployments(client: KubeClient, namespace: string): Promise<HeldTarget[]> {
  const { items } = await client.list(RESOURCES.deployment, namespace);
  return items.filter((d) => (d.metadata.finalizers ?? []).some((f) => holderOf(f) !== undefined)).map((d) => ({ kind: 'deployment' as const, namespace, name: d.metadata.name }));
}

export interface HoldStatus {
  readonly kinds: readonly string[];
  readonly namespace: string;
  /** What a hold whose Deployment is deleting waits for; undefined when a kind could not be listed (errors). */
  readonly waitingFor?: readonly Finalizing[];
  readonly errors: readonly string[];
}

export async function holdStatus(client: KubeClient, kinds: readonly HoldKind[], namespace: string): Promise<HoldStatus> {
  const listed = await new FinalizingObjects(client, kinds, namespace).list();
  return { kinds: kinds.map(holdKindName), namespace, ...(listed.finalizing && { waitingFor: listed.finalizing }), errors: listed.errors.map((e) => `${e.kind}: ${e.error.message}`) };
}

export function renderHoldStatus(s: HoldStatus): string {
  const head = `\nhold (${s.kinds.join(', ')}): a held Deployment being deleted waits for\n`;
  if (s.waitingFor === undefined) return `${head}  not known: ${s.errors.join('; ')}\n`;
  if (s.waitingFor.length === 0) return `${head}  nothing: no object of these kinds being deleted carries a finalizer\n`;
  return head + s.waitingFor.map((f) => `  ${f.object}  ${f.finalizers.join(', ')}\n`).join('');
}
