// DRAINGUARD_HOLD: the custom resource kinds whose finalizers the hold waits for,
// named as their CRDs are (`plural.group`), so that each is one API path.

import { invalid } from './errors.ts';

export interface HoldKind {
  /** The resource's plural name, as in the CRD's spec.names.plural. */
  readonly plural: string;
  readonly group: string;
}

export const HOLD_FORM = 'PLURAL.GROUP, such as installations.operator.tigera.io';

const DNS_LABEL = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Parses the comma-separated list; empty entries are skipped, repeats kept once. */
export function parseHoldList(raw: string, source: string): HoldKind[] {
  const kinds: HoldKind[] = [];
  for (const item of raw.split(',').map((s) => s.trim())) {
    if (item === '') continue;
    const dot = item.indexOf('.');
    const plural = item.slice(0, dot);
    const group = item.slice(dot + 1);
    // A CRD's group is a domain with at least one dot (the API server refuses others),
    // so `plural.group` has at least two: `deployments.apps` is no custom resource.
    const labels = group.split('.');
    const wellFormed =
      dot > 0 && DNS_LABEL.test(plural) && labels.length >= 2 && group.length <= 253 && labels.every((l) => DNS_SUBDOMAIN_LABEL.test(l));
    if (!wellFormed)
      throw invalid(
        'DG_CONFIG_HOLD_LIST',
        source,
        `comma-separated custom resource kinds as ${HOLD_FORM} (lowercase, the CRD's name)`,
        item,
      );
    if (!kinds.some((k) => k.plural === plural && k.group === group)) kinds.push(Object.freeze({ plural, group }));
  }
  return kinds;
}

export const holdKindName = (k: HoldKind): string => `${k.plural}.${k.group}`;
