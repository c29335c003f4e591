// The hold as `drainguard status` sees it from outside the pod: what a hold
// waits for (the listed kinds' objects still finalizing). Which Deployments
// carry holder finalizers is the guard's to tell (guard/inspect.ts).

import type { HoldKind } from '../config/hold-list.ts';
import { holdKindName } from '../config/hold-list.ts';
import type { KubeClient } from '../kube/client.ts';
import type { Finalizing } from './decide.ts';
import { FinalizingObjects } from './finalizing.ts';

export interface HoldStatus {
  readonly kinds: readonly string[];
  readonly namespace: string;
  /** What a hold whose Deployment is deleting waits for; undefined when a kind could not be listed (errors). */
  readonly waitingFor?: readonly Finalizing[];
  readonly errors: readonly string[];
}

export async function holdStatus(client: KubeClient, kinds: readonly HoldKind[], namespace: string): Promise<HoldStatus> {
  const listed = await new FinalizingObjects(client, kinds, namespace).list();
  return {
    kinds: kinds.map(holdKindName),
    namespace,
    ...(listed.finalizing && { waitingFor: listed.finalizing }),
    errors: listed.errors.map((e) => `${e.kind}: ${e.error.message}`),
  };
}

export function renderHoldStatus(s: HoldStatus): string {
  const head = `\nhold (${s.kinds.join(', ')}): a held Deployment being deleted waits for\n`;
  if (s.waitingFor === undefined) return `${head}  not known: ${s.errors.join('; ')}\n`;
  if (s.waitingFor.length === 0) return `${head}  nothing: no object of these kinds being deleted carries a finalizer\n`;
  return head + s.waitingFor.map((f) => `  ${f.object}  ${f.finalizers.join(', ')}\n`).join('');
}
