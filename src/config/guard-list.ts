import { RESOURCES } from '../kube/objects.ts';
import { GUARD_FORMS, type GuardKind, POLICY_KINDS, type PolicyKind, guardForm, isGuardKind, isPolicyKind } from './guard-kinds.ts';
import { invalid } from './errors.ts';

export type { GuardKind } from './guard-kinds.ts';

export interface GuardTarget {
  readonly kind: GuardKind;
  readonly namespace?: string;
  readonly name: string;
}

/** What `release --delete` names: drainguard's own RBAC, and its admission policy and binding. */
export interface DeleteTarget {
  readonly kind: GuardKind | PolicyKind;
  readonly namespace?: string;
  readonly name: string;
}

/** A --delete list: the forms of DRAINGUARD_GUARD, and validatingadmissionpolicy/NAME, validatingadmissionpolicybinding/NAME. */
export function parseDeleteList(raw: string, source: string): DeleteTarget[] {
  const items = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const policies = items.filter((item) => isPolicyKind(item.split('/')[0]!.toLowerCase()));
  const out: DeleteTarget[] = parseGuardList(items.filter((item) => !policies.includes(item)).join(','), source);
  for (const item of policies) {
    const [given, name, ...rest] = item.split('/');
    const kind = given!.toLowerCase() as PolicyKind;
    if (rest.length > 0 || !name || !PATH_SEGMENT.test(name))
      throw invalid('DG_CONFIG_GUARD_LIST', source, `${guardForm(kind)} (${POLICY_KINDS.join(', ')} are cluster-scoped)`, item);
    out.push(Object.freeze({ kind, name }));
  }
  return out;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
// RBAC object names are path segments (they may hold ':', as in system:controller:x).
const PATH_SEGMENT = /^[^/,\s%]+$/;
const EXPECTED = `comma-separated ${GUARD_FORMS}`;

export function parseGuardList(raw: string, source: string): GuardTarget[] {
  const targets: GuardTarget[] = [];
  const seen = new Set<string>();
  for (const item of raw.split(',').map((s) => s.trim())) {
    if (item === '') continue;
    const parts = item.split('/');
    const kind = parts[0]!.toLowerCase();
    if (!isGuardKind(kind)) throw invalid('DG_CONFIG_GUARD_LIST', source, `${EXPECTED} (unknown kind ${JSON.stringify(parts[0])})`, item);
    const namespaced = RESOURCES[kind].namespaced;
    const form = guardForm(kind);
    if (parts.length !== (namespaced ? 3 : 2)) throw invalid('DG_CONFIG_GUARD_LIST', source, form, item);
    const name = parts[parts.length - 1]!;
    if (!PATH_SEGMENT.test(name) || name === '.' || name === '..')
      throw invalid(
        'DG_CONFIG_GUARD_LIST',
        source,
        `${form} where NAME is the object's name (not empty, no '/', ',', '%' or spaces)`,
        item,
      );
    const target: GuardTarget = namespaced ? { kind, namespace: parts[1]!, name } : { kind, name };
    if (namespaced && !DNS_LABEL.test(target.namespace!))
      throw invalid(
        'DG_CONFIG_GUARD_LIST',
        source,
        `${form} where NAMESPACE is a valid namespace name (lowercase letters, digits and '-', at most 63)`,
        item,
      );
    const key = guardTargetKey(target);
    if (!seen.has(key)) targets.push(Object.freeze(target));
    seen.add(key);
  }
  return targets;
}

export function guardTargetKey(t: { readonly kind: string; readonly namespace?: string; readonly name: string }): string {
  return t.namespace === undefined ? `${t.kind}/${t.name}` : `${t.kind}/${t.namespace}/${t.name}`;
}
