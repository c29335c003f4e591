// What an uninstall with kubectl hands to `drainguard release -f`: from the
// manifests it applied, the guard list of every pod template that holds a
// guard, and drainguard's own RBAC (labelled app.kubernetes.io/name=drainguard),
// to be deleted once no holder is left. Pure: the manifests in, the lists out.

import { ConfigError } from '../errors.ts';
import { type DeleteTarget, type GuardTarget, guardTargetKey, parseGuardList } from '../config/guard-list.ts';
import { isGuardKind, isPolicyKind } from '../config/guard-kinds.ts';
import { RESOURCES } from '../kube/objects.ts';
import type { Manifest } from './finding.ts';
import { placementOf, podSpecOf, settingOf } from './pod.ts';

export interface ReleaseTargets {
  readonly guard: readonly GuardTarget[];
  readonly remove: readonly DeleteTarget[];
  /** Where the guarding pods ran: their holder Leases are there. */
  readonly namespace: string;
}

const OWN_LABEL = ['app.kubernetes.io/name', 'drainguard'] as const;

export function releaseTargets(objects: readonly Manifest[], source: string): ReleaseTargets {
  const guard = new Map<string, GuardTarget>();
  const namespaces = new Set<string>();
  for (const o of objects) {
    const pod = podSpecOf(o);
    const placement = pod && placementOf(pod);
    const list = placement && settingOf(placement.supervisor, 'guard');
    if (!list?.trim()) continue;
    const namespace = o.metadata.namespace;
    if (namespace === undefined)
      throw new ConfigError(
        'DG_CHECK_INPUT',
        `${source}: ${o.kind}/${o.metadata.name} guards objects but names no namespace: its holder Leases cannot be found`,
      );
    namespaces.add(namespace);
    for (const t of parseGuardList(list, `DRAINGUARD_GUARD of ${o.kind}/${namespace}/${o.metadata.name} in ${source}`))
      guard.set(guardTargetKey(t), t);
  }
  if (namespaces.size === 0)
    throw new ConfigError(
      'DG_CHECK_INPUT',
      `${source}: no Deployment in these manifests holds a guard (DRAINGUARD_GUARD): nothing to release`,
    );
  if (namespaces.size > 1)
    throw new ConfigError(
      'DG_CHECK_INPUT',
      `${source}: guarding pods in several namespaces (${[...namespaces].join(', ')}): release each with its own manifests`,
    );
  const remove = objects
    .filter((o) => (o.metadata.labels as Record<string, string> | undefined)?.[OWN_LABEL[0]] === OWN_LABEL[1])
    .flatMap((o): DeleteTarget[] => {
      const kind = o.kind.toLowerCase();
      if (isPolicyKind(kind)) return [{ kind, name: o.metadata.name }];
      if (!isGuardKind(kind)) return [];
      return [
        RESOURCES[kind].namespaced
          ? { kind, namespace: o.metadata.namespace ?? [...namespaces][0]!, name: o.metadata.name }
          : { kind, name: o.metadata.name },
      ];
    });
  return { guard: [...guard.values()], remove, namespace: [...namespaces][0]! };
}
