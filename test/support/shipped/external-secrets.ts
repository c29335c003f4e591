// External Secrets Operator as its project ships it, for a real node: the
// binary built by build.ts (github.com/external-secrets/external-secrets, its
// main.go) in an image of ours with the binary at /bin/external-secrets and the
// USER and ENTRYPOINT of its Dockerfile, and its own Helm chart
// (deploy/charts/external-secrets of the same module, kept beside the binary)
// with the CRDs in templates/crds/ as its release script puts them there
// (hack/helm.generate.sh: one file per CRD behind `installCRDs`, the Cluster
// and PushSecret kinds behind their `crds.create…` too), so that `helm
// uninstall` deletes them. Two changes that a user of the published chart
// does not see: the dependency on the bitwarden-sdk-server chart (disabled by
// default, packaged into the published chart and not to be had here) is
// dropped from Chart.yaml, and the chart's values turn the admission webhook
// and its certificate controller off (`webhook.create`, `certController.create`:
// neither takes part in a PushSecret's finalizer). The operator runs with its
// chart's `leaderElect: true`. Its metrics port is a value: on the host network
// (node-network.ts) each run takes a free one.
//
// drainguard is added by docs/helm.md's four steps (the chart is a `helm create`
// one: its Deployment sets no command, so wrap mode names the image's
// ENTRYPOINT), docs/hold.md's `hold.kinds` and docs/helm.md's `predelete`,
// nothing else.

import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { DRAINGUARD_IMAGE } from '../node/images.ts';
import type { RealNode } from '../node/index.ts';
import { buildOperator, importOperatorImage, OPERATORS } from './build.ts';

export const ESO = OPERATORS['external-secrets']!;
export const ESO_IMAGE = `drainguard.test/external-secrets/external-secrets:${ESO.version}`;
/** The release's name, and so the Deployment's, its ServiceAccount's and its container's (the chart's fullname). */
export const RELEASE = 'external-secrets';
export const PUSHSECRET_FINALIZER = 'pushsecret.externalsecrets.io/finalizer';
/** The kinds whose objects carry a finalizer of the operator's (the PushSecret's, and the generators' GeneratorState's). */
export const KINDS = ['pushsecrets.external-secrets.io', 'generatorstates.generators.external-secrets.io'];
const CHART = 'deploy/charts/external-secrets';

/** Builds the operator's image (FROM scratch, /bin/external-secrets, USER 65534, its ENTRYPOINT) and imports it into NODE. */
export function importEsoImage(node: RealNode): void {
  // Its Dockerfile: distroless/static, the binary at /bin/external-secrets, USER 65534 (nobody).
  importOperatorImage(
    node,
    'external-secrets',
    ESO_IMAGE,
    'FROM scratch\nCOPY bin/external-secrets /bin/external-secrets\nUSER 65534\nENTRYPOINT ["/bin/external-secrets"]\n',
  );
}

/** hack/helm.generate.sh's condition for a CRD of kind KIND. */
function crdCondition(kind: string): string {
  const flag = `.Values.crds.create${kind}`;
  return kind.includes('Cluster') || kind.includes('PushSecret') ? `and (.Values.installCRDs) (${flag})` : '.Values.installCRDs';
}

/** The values the tests set: the image, no webhook, leader election, a log whose times are no numbers (see refusedLine). */
const VALUES = {
  image: { repository: ESO_IMAGE.split(':')[0], tag: ESO_IMAGE.split(':')[1], pullPolicy: 'IfNotPresent' },
  leaderElect: true,
  log: { level: 'info', timeEncoding: 'rfc3339' },
  webhook: { create: false },
  certController: { create: false },
};

/** The RBAC templates of the chart: what docs/helm.md's `guard.templates` lists. */
export const RBAC_TEMPLATES = ['serviceaccount.yaml', 'rbac.yaml'];

const staged: string[] = [];

/** The operator's chart in a temporary directory, as its project ships it (no drainguard); returns its directory. */
export function writeEsoChart(): string {
  const build = buildOperator('external-secrets');
  const chart = join(mkdtempSync(join(tmpdir(), 'drainguard-eso-chart-')), 'external-secrets');
  staged.push(chart);
  cpSync(join(build, CHART), chart, { recursive: true });
  const meta = parse(readFileSync(join(chart, 'Chart.yaml'), 'utf8'));
  delete meta.dependencies;
  writeFileSync(join(chart, 'Chart.yaml'), stringify(meta));
  for (const file of readdirSync(join(build, 'config/crds/bases')).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')) {
    const text = readFileSync(join(build, 'config/crds/bases', file), 'utf8').replace(/^---\n/, '');
    const crd = parse(text);
    writeFileSync(
      join(chart, 'templates/crds', `${crd.spec.names.singular}.yaml`),
      `{{- if ${crdCondition(crd.spec.names.kind)} }}\n${text}{{- end }}\n`,
    );
  }
  const values = parse(readFileSync(join(chart, 'values.yaml'), 'utf8'));
  Object.assign(values, { image: { ...values.image, ...VALUES.image }, leaderElect: VALUES.leaderElect });
  Object.assign(values.log, VALUES.log);
  Object.assign(values.webhook, VALUES.webhook);
  Object.assign(values.certController, VALUES.certController);
  writeFileSync(join(chart, 'values.yaml'), stringify(values));
  return chart;
}

/**
 * docs/helm.md's four steps on CHART (the operator's, from writeEsoChart), in wrap mode, as for a chart from `helm
 * create` (its Deployment sets no command: wrap mode runs the image's ENTRYPOINT), and the hold of docs/hold.md on its
 * kinds: the dependency (the library unpacked in charts/, as `helm dependency update` would), the Deployment's template
 * made a partial, drainguard's one template, its values. The image is the node's drainguard image.
 */
export function addDrainguard(chart: string, library: string): void {
  const doc = readFileSync('docs/helm.md', 'utf8');
  const dependency = /```yaml\n(dependencies:\n[\s\S]*?)```/.exec(doc)![1]!;
  writeFileSync(join(chart, 'Chart.yaml'), `${readFileSync(join(chart, 'Chart.yaml'), 'utf8')}${dependency}`);
  mkdirSync(join(chart, 'charts'), { recursive: true });
  execFileSync('cp', ['-rL', library, join(chart, 'charts/drainguard')]);
  renameSync(join(chart, 'templates/deployment.yaml'), join(chart, 'templates/_deployment.yaml'));
  writeFileSync(join(chart, 'templates/drainguard.yaml'), '{{ include "drainguard.all" . }}\n');
  const values = parse(readFileSync(join(chart, 'values.yaml'), 'utf8'));
  const [repository, tag] = DRAINGUARD_IMAGE.split(':');
  values.drainguard = {
    mode: 'wrap',
    image: { repository, tag },
    operator: { template: '_deployment.yaml', command: [ESO.imagePath] },
    guard: { templates: RBAC_TEMPLATES },
    // The hold with its default settle: PushSecret is served in v1alpha1 alone, in a group that prefers v1.
    hold: { kinds: KINDS },
    // docs/helm.md's pre-delete hook, the PushSecrets (in any namespace) before Helm deletes anything: their cleanup
    // reads the SecretStore they pushed to, which the CRDs' deletion removes at once (no finalizer keeps it,
    // external-secrets#3411). Left to the hold alone, which store or PushSecret goes first is a race the operator
    // lost once in CI. `helm template --no-hooks` (the kubectl way) leaves the hook out.
    predelete: { enabled: true, stages: [KINDS], allNamespaces: true, requireReady: `app.kubernetes.io/name=${RELEASE}` },
  };
  writeFileSync(join(chart, 'values.yaml'), stringify(values));
}

/** Removes the charts written (test.after). */
export function removeEsoCharts(): void {
  for (const chart of staged.splice(0)) rmSync(join(chart, '..'), { recursive: true, force: true });
}
