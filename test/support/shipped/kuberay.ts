// KubeRay as its project ships it, for a real node: the binary built by
// build.ts (github.com/ray-project/kuberay/ray-operator, its main.go) in an
// image of ours with the binary at /manager and the USER and ENTRYPOINT of its
// Dockerfile, and its own kustomize install, config/default of the same module
// (the CRDs, the RBAC, the manager; kept beside the binary), copied whole and
// used through an overlay of the test's, as a user's overlay would: the
// namespace (config/default says `default`), the image, and the two ports the
// manager binds (its metrics, which its probes read, and its health probe):
// on the host network (node-network.ts) each run takes free ones. The operator
// runs with its own defaults, leader election on.
//
// drainguard is added by `drainguard adopt` of that overlay (docs/deploy.md,
// "Adding drainguard to any other operator") and docs/hold.md's hold for
// kustomize (its component and its ConfigMap's `hold` and `holdGroup`),
// nothing else. adopt refuses KubeRay's Deployment as it is: its container is
// named kuberay-operator, and the components find the operator's by the name
// manager; adopt's refusal says to rename it, and the guarded run's overlay does
// (see adoptKubeRay).

import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parse, stringify } from 'yaml';
import { DRAINGUARD_IMAGE } from '../node/images.ts';
import type { RealNode } from '../node/index.ts';
import { EXE } from '../proc.ts';
import { buildOperator, importOperatorImage, OPERATORS } from './build.ts';

export const KUBERAY = OPERATORS.kuberay!;
export const KUBERAY_IMAGE = `drainguard.test/kuberay/operator:${KUBERAY.version}`;
/** The Deployment's name (config/manager/manager.yaml), its pods' prefix, its ServiceAccount's and its container's. */
export const OPERATOR = 'kuberay-operator';
export const RAYJOB_FINALIZER = 'ray.io/rayjob-finalizer';
/**
 * The kinds whose objects carry a finalizer of the operator's: the RayJob's (its StopJob), and the RayCluster's
 * `ray.io/gcs-ft-redis-cleanup-finalizer` (raycluster_controller.go, with GCS fault tolerance on). RayService has none.
 */
export const KINDS = ['rayjobs.ray.io', 'rayclusters.ray.io'];
/** config/default's `images:` names the manager's image so; the overlay's entry replaces that name. */
const SHIPPED_IMAGE = 'quay.io/kuberay/operator';
/** What the install component's init container runs (deploy/components/install), replaced by the node's drainguard image. */
const COMPONENT_IMAGE = 'ghcr.io/drainguard/drainguard';
const COMPONENTS = resolve('deploy/components');

/** Builds the operator's image (FROM scratch, /manager, USER 65532:65532, its ENTRYPOINT) and imports it into NODE. */
export function importKubeRayImage(node: RealNode): void {
  // Its Dockerfile: distroless/base, the binary at /manager, USER 65532:65532. Built with CGO_ENABLED=0, it needs no libc.
  importOperatorImage(node, 'kuberay', KUBERAY_IMAGE, 'FROM scratch\nCOPY manager /manager\nUSER 65532:65532\nENTRYPOINT ["/manager"]\n');
}

export interface KubeRayPorts {
  readonly metrics: number;
  readonly probe: number;
}

const staged: string[] = [];

/**
 * KubeRay's config/ in a temporary directory, as its project ships it, and beside it the user's overlay `overlay/`
 * over config/default: namespace NS, the node's image, PORTS. Returns the overlay's directory.
 */
export function writeKubeRayOverlay(ns: string, ports: KubeRayPorts): string {
  const root = mkdtempSync(join(tmpdir(), 'drainguard-kuberay-'));
  staged.push(root);
  cpSync(join(buildOperator('kuberay'), 'config'), join(root, 'config'), { recursive: true });
  const [newName, newTag] = KUBERAY_IMAGE.split(':');
  // The ports by JSON patch: the container's one port (named http, which both probes name) and two flags of main.go.
  const ports6902 = [
    { op: 'test', path: '/spec/template/spec/containers/0/ports/0/containerPort', value: 8080 },
    { op: 'replace', path: '/spec/template/spec/containers/0/ports/0/containerPort', value: ports.metrics },
    { op: 'add', path: '/spec/template/spec/containers/0/args/-', value: `--metrics-addr=:${ports.metrics}` },
    { op: 'add', path: '/spec/template/spec/containers/0/args/-', value: `--health-probe-bind-address=:${ports.probe}` },
  ];
  writeKustomization(join(root, 'overlay'), {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    namespace: ns,
    resources: ['../config/default'],
    images: [{ name: SHIPPED_IMAGE, newName, newTag }],
    patches: [{ target: { kind: 'Deployment', name: OPERATOR }, patch: stringify(ports6902) }],
  });
  return join(root, 'overlay');
}

function writeKustomization(dir: string, k: object): void {
  execFileSync('mkdir', ['-p', dir]);
  writeFileSync(join(dir, 'kustomization.yaml'), stringify(k));
}

export interface Adopted {
  /** The kustomize directory adopt wrote, with the hold added: what is applied and deleted. */
  readonly dir: string;
  /** What adopt printed, its refusal of the overlay as KubeRay names its container first. */
  readonly refusal: string;
  readonly output: string;
}

const runAdopt = (dir: string) =>
  spawnSync(EXE, ['adopt', dir, '--components', COMPONENTS], { encoding: 'utf8', timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe'] });

/**
 * `drainguard adopt OVERLAY` as a user runs it. On KubeRay's Deployment it refuses (exit 1, DG_ADOPT_REFUSED: the
 * container is named kuberay-operator, the components find it by the name manager) and says to rename it: the overlay
 * gets that rename (a JSON patch: a strategic-merge patch cannot change the key it merges on), and adopt is run again;
 * it writes ../drainguard beside the overlay. Then docs/hold.md for kustomize: the hold component after the mode's, and
 * the kinds and their group in adopt's ConfigMap; the install component's image is the node's drainguard image. What
 * it wrote is checked by `drainguard check` on its render (adopt checks before it writes; this checks the hold too).
 */
export function adoptKubeRay(overlay: string): Adopted {
  const first = runAdopt(overlay);
  const refusal = `${first.stdout}${first.stderr}`;
  if (first.status === 0 || !refusal.includes(`containers are ${OPERATOR}, and the components find the operator's`))
    throw new Error(`drainguard adopt ${overlay}: expected its refusal of the container's name, got exit ${first.status}:\n${refusal}`);
  const k = parse(readFileSync(join(overlay, 'kustomization.yaml'), 'utf8'));
  k.patches.push({
    target: { kind: 'Deployment', name: OPERATOR },
    patch: stringify([
      { op: 'test', path: '/spec/template/spec/containers/0/name', value: OPERATOR },
      { op: 'replace', path: '/spec/template/spec/containers/0/name', value: 'manager' },
    ]),
  });
  writeKustomization(overlay, k);
  const second = runAdopt(overlay);
  const output = `${second.stdout}${second.stderr}`;
  if (second.status !== 0) throw new Error(`drainguard adopt ${overlay} (the container renamed): exit ${second.status}\n${output}`);
  const dir = join(overlay, '..', 'drainguard');
  const adopted = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8'));
  const text = readFileSync(join(dir, 'kustomization.yaml'), 'utf8');
  adopted.components.push(relative(dir, join(COMPONENTS, 'hold')));
  const [newName, newTag] = DRAINGUARD_IMAGE.split(':');
  adopted.images = [{ name: COMPONENT_IMAGE, newName, newTag }];
  // Keep adopt's head comments (its marker and the patch's reasons are comments of the file).
  const comments = text.split('\n').filter((l) => l.startsWith('#'));
  writeFileSync(join(dir, 'kustomization.yaml'), `${comments.join('\n')}\n${stringify(adopted, { blockQuote: 'literal' })}`);
  const config = readFileSync(join(dir, 'drainguard.yaml'), 'utf8');
  const cm = parse(config);
  cm.data.hold = KINDS.join(',');
  cm.data.holdGroup = 'ray.io';
  writeFileSync(join(dir, 'drainguard.yaml'), `${config.split('\n')[0]}\n${stringify(cm)}`);
  const render = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', maxBuffer: 64 << 20 });
  const check = spawnSync(EXE, ['check', '-'], { input: render, encoding: 'utf8', timeout: 60_000 });
  if (check.status !== 0) throw new Error(`drainguard check of ${dir}'s render: exit ${check.status}\n${check.stdout}${check.stderr}`);
  return { dir, refusal, output };
}

/** Removes the directories written (test.after). */
export function removeKubeRayOverlays(): void {
  for (const dir of staged.splice(0)) rmSync(dir, { recursive: true, force: true });
}
