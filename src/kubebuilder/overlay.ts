// config/drainguard of a kubebuilder project: docs/deploy.md's overlay of
// config/default, with the components of the project's layout (a namespaced
// project's manager-role is a Role: kubebuilder-namespaced) and, in wrap mode,
// the manager container's memory raised by drainguard's. config/default stays
// as kubebuilder made it, so `make build-installer` (what helm/v2-alpha reads)
// renders no drainguard object into the chart's templates.

import { parseAllDocuments } from 'yaml';
import type { Mode } from '../adopt/plan.ts';
import { WRAP_MEMORY_MIB } from '../check/memory.ts';
import { VERSION } from '../version.ts';
import { refuse } from './refusal.ts';

export type { Mode };
export const MODES: readonly Mode[] = ['wrap', 'native-sidecar', 'sidecar'];

export const OVERLAY_DIR = 'config/drainguard';
/** The components as released: the tag of this drainguard. */
export const COMPONENTS = 'https://github.com/drainguard/drainguard//deploy/components';

export interface OverlayRequest {
  readonly namespaced: boolean;
  readonly mode: Mode;
  /** config/manager/manager.yaml, for its manager container's memory; the scaffold's 64Mi and 128Mi when it has none. */
  readonly managerManifest?: string;
}

export const SETTINGS = `apiVersion: v1
kind: ConfigMap
metadata:
  name: drainguard
  annotations:
    config.kubernetes.io/local-config: "true"
`;

const component = (name: string) => `  - ${COMPONENTS}/${name}?ref=v${VERSION}\n`;

/** config/drainguard's two files, by path from the project's root. */
export function overlayFiles(request: OverlayRequest): Record<string, string> {
  const kustomization =
    'apiVersion: kustomize.config.k8s.io/v1beta1\n' +
    'kind: Kustomization\n' +
    'resources:\n' +
    '  - ../default\n' +
    '  - drainguard.yaml\n' +
    'components:\n' +
    component(request.namespaced ? 'kubebuilder-namespaced' : 'kubebuilder') +
    component(request.mode) +
    component('guard-more') +
    (request.mode === 'wrap' ? memoryPatch(request.managerManifest) : '');
  return { [`${OVERLAY_DIR}/kustomization.yaml`]: kustomization, [`${OVERLAY_DIR}/drainguard.yaml`]: SETTINGS };
}

/** The component an overlay must name for the layout, and the one it must not. */
export const layoutComponents = (namespaced: boolean): { needed: string; wrong: string } =>
  namespaced ? { needed: 'kubebuilder-namespaced', wrong: 'kubebuilder' } : { needed: 'kubebuilder', wrong: 'kubebuilder-namespaced' };

/** Whether a kustomization's text names the component (remote or local). */
export const namesComponent = (kustomization: string, name: string): boolean =>
  new RegExp(`/components/${name}(\\?|/?\\s*$)`, 'm').test(kustomization);

function memoryPatch(managerManifest: string | undefined): string {
  const { request, limit } = managerMemory(managerManifest);
  const [addRequest, addLimit] = [WRAP_MEMORY_MIB.request, WRAP_MEMORY_MIB.limit];
  return `# wrap mode: drainguard runs in the manager container; its memory request and
# limit (the scaffold's ${request}Mi, ${limit}Mi) raised by drainguard's ${addRequest}Mi and ${addLimit}Mi. Not needed in a sidecar mode.
patches:
  - target: {kind: Deployment, name: controller-manager}
    patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: controller-manager
      spec:
        template:
          spec:
            containers:
              - name: manager
                resources:
                  requests:
                    memory: ${request + addRequest}Mi
                  limits:
                    memory: ${limit + addLimit}Mi
`;
}

/** The manager container's memory in MiB, as config/manager gives it (Mi or Gi); the scaffold's where it names none. */
function managerMemory(manifest: string | undefined): { request: number; limit: number } {
  const scaffold = { request: 64, limit: 128 };
  if (manifest === undefined) return scaffold;
  const mib = (q: unknown, what: string): number | undefined => {
    if (q === undefined) return undefined;
    const m = /^(\d+)(Mi|Gi)$/.exec(String(q));
    if (!m)
      throw refuse(
        `config/manager/manager.yaml: the manager's memory ${what} ${JSON.stringify(q)} is not in Mi or Gi: ` +
          "raise it by drainguard's in config/drainguard by hand (docs/deploy.md, step 1)",
      );
    return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
  };
  for (const doc of parseAllDocuments(manifest)) {
    const o = doc.toJS() as { kind?: string; spec?: { template?: { spec?: { containers?: any[] } } } } | null;
    if (o?.kind !== 'Deployment') continue;
    const manager = o.spec?.template?.spec?.containers?.find((c) => c?.name === 'manager');
    const resources = manager?.resources ?? {};
    return {
      request: mib(resources.requests?.memory, 'request') ?? scaffold.request,
      limit: mib(resources.limits?.memory, 'limit') ?? scaffold.limit,
    };
  }
  return scaffold;
}
