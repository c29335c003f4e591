// `drainguard check --plain PATH`: the manifests against the chart's render
// before drainguard was added. Adding drainguard only adds objects (its RBAC,
// its hooks) and changes the operator's workload in place, so every object of
// the plain render must still be there: one that is not was lost on the way
// (a library chart that rendered only the first Deployment of its template,
// dropping a StatefulSet or the ServiceAccount beside it), and no other check
// can see what is not in its input.

import { type Finding, type Manifest, objectId } from './finding.ts';
import { podSpecOf } from './pod.ts';

const TEXT = {
  'object-lost': (id: string, workload: boolean) => ({
    message:
      `the plain render (--plain) has ${id}, which these manifests do not: adding drainguard lost it` +
      (workload ? ", and with it the operator's pods, which nothing here guards" : ''),
    fix:
      'render it with the release again: the library chart renders every document of drainguard.operator.template, ' +
      'its Deployment, StatefulSet or DaemonSet with drainguard added and the others as they are ' +
      '(an older one rendered only the first Deployment); or keep the object in a template file of its own, ' +
      'which Helm renders as it is',
  }),
};

/** Each object of PLAIN that OBJECTS lack (both placed in their namespaces alike). */
export function checkAgainstPlain(objects: readonly Manifest[], plain: readonly Manifest[]): Finding[] {
  const present = new Set(objects.map((o) => `${o.apiVersion.split('/').at(-2) ?? ''} ${objectId(o)}`));
  return plain
    .filter((o) => !present.has(`${o.apiVersion.split('/').at(-2) ?? ''} ${objectId(o)}`))
    .map((o) => ({
      code: 'object-lost',
      severity: 'error',
      object: objectId(o),
      ...TEXT['object-lost'](objectId(o), podSpecOf(o) !== undefined),
    }));
}
