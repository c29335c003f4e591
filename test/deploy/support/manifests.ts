// Rendering the kustomizations in deploy/ with kubectl, and checking what they
// render against the Kubernetes API's schemas: kubernetes-models (generated
// from the OpenAPI definitions) for types, required fields and formats, and
// client-node's generated models for unknown fields, which the API server
// refuses under strict field validation (kubectl's default).

import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { type Layout, MANAGER_IMAGE, scaffold } from '../../support/kubebuilder.ts';

export const ROOT = resolve('.');
export const DEPLOY = join(ROOT, 'deploy');

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string>; finalizers?: string[] };
  [key: string]: any;
}

/** Every directory under deploy/ holding a Kustomization (not a Component, which renders only as part of one). */
export function kustomizations(dir = DEPLOY): string[] {
  const here = existsSync(join(dir, 'kustomization.yaml')) && (parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as { kind?: string }).kind !== 'Component';
  const below = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .flatMap((e) => kustomizations(join(dir, e.name)));
  return [...(here ? [relative(ROOT, dir)] : []), ...below].sort();
}

const cache = new Map<string, KubeObject[]>();

/** `kubectl kustomize DIR`, parsed. */
export function render(dir: string): KubeObject[] {
  if (!cache.has(dir)) {
    const text = execFileSync('kubectl', ['kustomize', join(ROOT, dir)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    cache.set(dir, parseObjects(text));
  }
  return cache.get(dir)!;
}

export function parseObjects(text: string): KubeObject[] {
  return parseAllDocuments(text)
    .map((doc) => {
      if (doc.errors.length > 0) throw doc.errors[0];
      return doc.toJS() as KubeObject | null;
    })
    .filter((o): o is KubeObject => o !== null);
}

const id = (o: KubeObject): string => `${o.kind}/${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name}`;

/** What the API server would refuse in this object: schema violations and unknown fields. */
export async function problems(object: KubeObject): Promise<string[]> {
  const [group, version] = object.apiVersion.includes('/') ? object.apiVersion.split('/') : [undefined, object.apiVersion];
  let model: { new (data: object): { validate(): void } };
  try {
    const mod = (await import(`kubernetes-models/${group ? `${group}/` : ''}${version}/${object.kind}`)) as Record<string, any>;
    model = mod[object.kind];
  } catch {
    return [`${id(object)}: no schema for ${object.apiVersion} ${object.kind}`];
  }
  const found: string[] = [];
  try {
    new model(object).validate();
  } catch (err) {
    found.push(`${id(object)}: ${(err as Error).message}`);
  }
  const typeName = `${version![0]!.toUpperCase()}${version!.slice(1)}${object.kind}`;
  clientModels ??= (await import('@kubernetes/client-node')) as unknown as Models;
  found.push(...unknownFields(clientModels, object, typeName, '').map((path) => `${id(object)}: unknown field ${path}`));
  return found;
}

type Models = Record<string, { getAttributeTypeMap?: () => { baseName: string; type: string }[] }>;
/** client-node's generated models, imported by the first problems(): the import takes seconds, and most files reading manifests here validate none. */
let clientModels: Models | undefined;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function unknownFields(models: Models, value: unknown, type: string, path: string): string[] {
  const array = /^Array<(.+)>$/.exec(type);
  if (array) return Array.isArray(value) ? value.flatMap((v, i) => unknownFields(models, v, array[1]!, `${path}[${i}]`)) : [];
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) return isObject(value) ? Object.entries(value).flatMap(([k, v]) => unknownFields(models, v, map[1]!, `${path}[${k}]`)) : [];
  const attributes = models[type]?.getAttributeTypeMap?.();
  if (!attributes || !isObject(value)) return [];
  const known = new Map(attributes.map((a) => [a.baseName, a.type]));
  return Object.entries(value).flatMap(([key, v]) => {
    const field = path === '' ? key : `${path}.${key}`;
    const fieldType = known.get(key);
    return fieldType === undefined ? [field] : unknownFields(models, v, fieldType, field);
  });
}

/** deploy/rendered/MODE.yaml: the example's rendering, kept equal to kubectl's by the drift test. */
export function rendered(mode: string): KubeObject[] {
  return parseObjects(readFileSync(join(DEPLOY, 'rendered', `${mode}.yaml`), 'utf8'));
}

export const ofKind = (objects: readonly KubeObject[], kind: string): KubeObject[] => objects.filter((o) => o.kind === kind);

export function theDeployment(objects: readonly KubeObject[]): KubeObject {
  const deployments = ofKind(objects, 'Deployment');
  if (deployments.length !== 1) throw new Error(`expected one Deployment, found ${deployments.length}`);
  return deployments[0]!;
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}

/** The environment the kubelet gives a container: downward API values filled in, $(VAR) expanded. */
export function kubeletEnv(env: readonly EnvVar[] | undefined, pod: { name: string; namespace: string; uid: string }): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  const fields: Record<string, string> = { 'metadata.name': pod.name, 'metadata.namespace': pod.namespace, 'metadata.uid': pod.uid };
  for (const e of env ?? []) {
    if (e.valueFrom?.fieldRef) out[e.name] = fields[e.valueFrom.fieldRef.fieldPath];
    else out[e.name] = (e.value ?? '').replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => out[name] ?? whole);
  }
  return out;
}

export interface Example {
  readonly objects: KubeObject[];
  readonly namespace: string;
  /** The example operator's name (Deployment, ClusterRole, ServiceAccount, pod label) and image repository. */
  readonly name: string;
  readonly image: string;
  /** The operator's container names no command: its image's ENTRYPOINT runs (test/deploy/fixtures/shapes-operator). */
  readonly entrypoint?: boolean;
}

/**
 * deploy/examples/MODE as `kubectl kustomize` renders it, made unique for a
 * cluster other test files share: the namespace becomes `ID-system` and the
 * example operator's name (and image) `ID`.
 */
export function example(mode: string, id: string): Example {
  const text = execFileSync('kubectl', ['kustomize', join(DEPLOY, 'examples', mode)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const objects = parseObjects(text.replaceAll('example-system', `${id}-system`).replaceAll('example-operator', id));
  return { objects, namespace: `${id}-system`, name: id, image: `example.com/${id}` };
}

/** The yaml blocks of docs/deploy.md's section HEADING, in order. */
export function docBlocks(heading: string): string[] {
  const doc = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
  const start = doc.indexOf(`\n## ${heading}\n`);
  if (start === -1) throw new Error(`docs/deploy.md has no section "${heading}"`);
  const end = doc.indexOf('\n## ', start + 1);
  return [...doc.slice(start, end === -1 ? undefined : end).matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/** The remote components docs/deploy.md names, and the local path that stands for each. */
export const REMOTE_COMPONENT = /https:\/\/github\.com\/\S+\/\/deploy\/components\/([a-z-]+)\?ref=\S+/g;

export interface KubebuilderProject extends Example {
  /** config/drainguard, the overlay docs/deploy.md has the user write. */
  readonly overlay: string;
}

/**
 * config/ of the project the kubebuilder CLI scaffolds (test/support/kubebuilder.ts:
 * `init`, `create api`, in LAYOUT) as project PROJECT (its namePrefix PROJECT- and namespace
 * PROJECT-system, as `kubebuilder init` makes them in a folder so named), with the overlay of
 * docs/deploy.md's "Adding drainguard to a kubebuilder project" written into
 * config/drainguard as the doc shows it, in MODE; for a namespaced project with the
 * components its "A namespace-scoped project" lists. The components come from this
 * checkout instead of the remote URL.
 */
export function kubebuilderProject(mode: string, project: string, dir: string, layout: Layout = 'cluster'): KubebuilderProject {
  const overlay = kubebuilderOverlay(mode, project, dir, layout);
  const text = execFileSync('kubectl', ['kustomize', overlay], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return { objects: parseObjects(text), namespace: `${project}-system`, name: `${project}-controller-manager`, image: `${MANAGER_IMAGE}:latest`, overlay };
}

/** The files of kubebuilderProject, not rendered: config/drainguard. */
export function kubebuilderOverlay(mode: string, project: string, dir: string, layout: Layout = 'cluster'): string {
  const config = join(dir, 'config');
  cpSync(join(scaffold(undefined, layout).dir, 'config'), config, { recursive: true });
  const defaults = join(config, 'default/kustomization.yaml');
  writeFileSync(defaults, readFileSync(defaults, 'utf8').replace('namespace: guestbook-system', `namespace: ${project}-system`).replace('namePrefix: guestbook-', `namePrefix: ${project}-`));
  const blocks = docBlocks('Adding drainguard to a kubebuilder project');
  const [doc, settings] = blocks;
  if (!doc?.includes('kind: Kustomization') || !settings?.includes('kind: ConfigMap')) throw new Error('docs/deploy.md: the kubebuilder section shows the kustomization, then the ConfigMap');
  const components = blocks.find((b) => b.startsWith('components:') && b.includes('kubebuilder-namespaced'));
  if (layout === 'namespaced' && !components) throw new Error('docs/deploy.md: "A namespace-scoped project" shows no components: block with kubebuilder-namespaced');
  const kustomization = layout === 'namespaced' ? doc.replace(/components:\n( {2}- .*\n)+/, components!) : doc;
  const overlay = join(config, 'drainguard');
  mkdirSync(overlay);
  const local = (component: string) => relative(overlay, join(DEPLOY, 'components', component === 'wrap' ? mode : component));
  writeFileSync(join(overlay, 'kustomization.yaml'), kustomization.replace(REMOTE_COMPONENT, (_all, component: string) => local(component)));
  writeFileSync(join(overlay, 'drainguard.yaml'), settings);
  return overlay;
}

/** docs/deploy.md's "More than one ClusterRole and binding": its kustomization (with guard-more) and its settings. */
export function moreBlocks(): { kustomization: string; settings: string } {
  const blocks = docBlocks('More than one ClusterRole and binding');
  const kustomization = blocks.find((b) => b.includes('kind: Kustomization') && b.includes('guard-more'));
  const settings = blocks.find((b) => b.includes('kind: ConfigMap'));
  if (!kustomization || !settings) throw new Error('docs/deploy.md: "More than one ClusterRole and binding" shows the kustomization, then the ConfigMap');
  return { kustomization, settings };
}

export interface ShapesOptions {
  /** The operator's name in place of shapes-operator (its ClusterRoles, bindings, Deployment, image). */
  readonly name?: string;
  /** Its namespace in place of shapes-system. */
  readonly namespace?: string;
  /** Changes to the doc's settings. */
  readonly edit?: (settings: string) => string;
  /** The components, from the doc's (the mode in place of wrap). */
  readonly components?: (list: string[]) => string[];
}

/**
 * test/deploy/fixtures/shapes-operator (an operator shaped as issue 41 found
 * real charts) in ROOT/default-NAME, and beside it in ROOT/NAME the overlay
 * docs/deploy.md's "More than one ClusterRole and binding" has the user write,
 * in MODE, the components from this checkout. Another NAME than the fixture's
 * leaves its Namespace out (the first operator's) and aggregates by a label of
 * its own. Returns the overlay's directory.
 */
export function shapesOverlay(root: string, mode: string, { name = 'shapes-operator', namespace = 'shapes-system', edit = (s) => s, components = (list) => list }: ShapesOptions = {}): string {
  const { kustomization, settings } = moreBlocks();
  const rename = (text: string) => text.replaceAll('shapes-operator', name).replaceAll('shapes-system', namespace);
  const base = join(root, `default-${name}`);
  cpSync(join(ROOT, 'test/deploy/fixtures/shapes-operator'), base, { recursive: true });
  for (const file of ['namespace.yaml', 'rbac.yaml', 'leader-election.yaml', 'deployment.yaml']) writeFileSync(join(base, file), rename(readFileSync(join(base, file), 'utf8')));
  if (name !== 'shapes-operator' && namespace === 'shapes-system') {
    for (const file of ['rbac.yaml']) writeFileSync(join(base, file), readFileSync(join(base, file), 'utf8').replaceAll('aggregate-to-operator', `aggregate-to-${name}`));
    writeFileSync(join(base, 'kustomization.yaml'), readFileSync(join(base, 'kustomization.yaml'), 'utf8').replace('  - namespace.yaml\n', ''));
  }
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  const named = [...kustomization.matchAll(REMOTE_COMPONENT)].map((m) => m[1]!);
  const local = components(named.map((c) => (c === 'wrap' ? mode : c))).map((c) => `  - ${relative(dir, join(DEPLOY, 'components', c))}`);
  writeFileSync(join(dir, 'kustomization.yaml'), kustomization.replace('../default', relative(dir, base)).replace(/components:\n( {2}- .*\n)+/, `components:\n${local.join('\n')}\n`));
  writeFileSync(join(dir, 'drainguard.yaml'), edit(rename(settings)));
  return dir;
}
