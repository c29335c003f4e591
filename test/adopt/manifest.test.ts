// `drainguard adopt` (the built executable) on a plain manifest file and on a
// kustomize directory, then the real tools on the overlay it wrote: `kubectl
// kustomize` and `drainguard check` (the executable again) with no findings.
// The ground truth is written apart from adopt: on the example operator, the
// overlay renders what deploy/examples/MODE renders (the overlays the docs
// give, kept equal to kubectl by test/deploy/drift.test.ts), object for
// object; on the shapes operator, the guard is the one docs/deploy.md's "More
// than one ClusterRole and binding" names. A shape adopt cannot decide for is
// refused with the step to do by hand, nothing written; run twice, the second
// run changes nothing; --dry-run writes nothing.

import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse, stringify } from 'yaml';
import { type KubeObject, ROOT, moreBlocks, parseObjects, rendered } from '../deploy/support/manifests.ts';
import { check } from '../helm/support/shapes.ts';
import { adoptManifest, cleanupCopies, scratch, treeDigest } from './support.ts';
import { WRAP_MEMORY_MIB } from '../../src/check/memory.ts';

test.after(cleanupCopies);

const kustomize = (dir: string): string =>
  execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const key = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const byKey = (objects: KubeObject[]) => new Map(objects.map((o) => [key(o), o]));

/** The example operator's kustomize directory, copied: DIR/operator. */
function exampleDir(): { root: string; input: string } {
  const root = scratch();
  cpSync(join(ROOT, 'deploy/examples/operator'), join(root, 'operator'), { recursive: true });
  return { root, input: join(root, 'operator') };
}

/** The example operator as one YAML file, as kubectl apply -f users have it (kubectl kustomize's output), EDIT applied. */
function exampleFile(edit: (objects: KubeObject[]) => KubeObject[] = (o) => o): { root: string; input: string } {
  const root = scratch();
  const objects = edit(parseObjects(kustomize(join(ROOT, 'deploy/examples/operator'))));
  const input = join(root, 'operator.yaml');
  writeFileSync(input, objects.map((o) => stringify(o)).join('---\n'));
  return { root, input };
}

const deployment = (objects: KubeObject[]) => objects.find((o) => o.kind === 'Deployment')!;
const theManager = (objects: KubeObject[]) => objects.find((o) => o.kind === 'Deployment')!.spec.template.spec.containers[0];

for (const mode of ['wrap', 'native-sidecar', 'sidecar']) {
  test(`${mode}, a kustomize directory: the overlay renders what deploy/examples/${mode} does, object for object; check finds nothing`, () => {
    const { root, input } = exampleDir();
    const run = adoptManifest(input, mode === 'wrap' ? [] : ['--mode', mode]);
    assert.is(run.code, 0, run.stdout + run.stderr);
    assert.match(run.stdout, /changed:\n/);
    assert.match(run.stdout, /no findings/);
    const overlay = join(root, 'drainguard');
    const text = kustomize(overlay);
    const ours = byKey(parseObjects(text));
    const docs = byKey(rendered(mode));
    assert.equal([...ours.keys()].sort(), [...docs.keys()].sort(), 'the same objects');
    for (const [k, o] of docs) assert.equal(ours.get(k), o, k);
    const result = check(text, 'example-system');
    assert.is(result.code, 0, result.out);
    assert.match(result.out, /no findings/);
  });
}

test('a manifest file: the overlay holds a copy and renders the same as the directory; a changed file is copied again', () => {
  const { root, input } = exampleFile();
  const run = adoptManifest(input);
  assert.is(run.code, 0, run.stdout + run.stderr);
  const overlay = join(root, 'drainguard');
  assert.is(readFileSync(join(overlay, 'operator.yaml'), 'utf8'), readFileSync(input, 'utf8'));
  assert.match(run.stdout, /\+ \S+operator\.yaml: a copy of /);
  const ours = byKey(parseObjects(kustomize(overlay)));
  const docs = byKey(rendered('wrap'));
  assert.equal([...ours.keys()].sort(), [...docs.keys()].sort());
  for (const [k, o] of docs) assert.equal(ours.get(k), o, k);
  // The operator's file changes (a bigger memory limit): run again, the copy and the patch follow.
  const objects = parseObjects(readFileSync(input, 'utf8'));
  theManager(objects).resources.limits.memory = '256Mi';
  writeFileSync(input, objects.map((o) => stringify(o)).join('---\n'));
  const again = adoptManifest(input);
  assert.is(again.code, 0, again.stdout + again.stderr);
  assert.match(again.stdout, /~ \S+operator\.yaml/);
  const limit = `${256 + WRAP_MEMORY_MIB.limit}Mi`;
  assert.equal(theManager(parseObjects(kustomize(overlay))).resources.limits.memory, limit, "256Mi + drainguard's limit");
});

test("the shapes operator: guard-more with docs/deploy.md's guard list; a command of its image given; check finds nothing", () => {
  const root = scratch();
  cpSync(join(ROOT, 'test/deploy/fixtures/shapes-operator'), join(root, 'default'), { recursive: true });
  const input = join(root, 'default');
  const refused = adoptManifest(input);
  assert.is(refused.code, 1, refused.stdout + refused.stderr);
  assert.match(refused.stderr, /sets no command .*--command PATH.*"Adding drainguard to any other operator"/);
  assert.not.ok(existsSync(join(root, 'drainguard')), 'nothing written');
  const run = adoptManifest(input, ['--command', '/ko-app/shapes-operator']);
  assert.is(run.code, 0, run.stdout + run.stderr);
  const settings = parse(readFileSync(join(root, 'drainguard/drainguard.yaml'), 'utf8'));
  const docs = parse(moreBlocks().settings);
  assert.equal(settings.data.guard.split(',').sort(), docs.data.guard.split(',').sort(), "the docs' guard entries");
  assert.equal([...settings.data.guardNames].sort(), [...docs.data.guardNames].sort());
  assert.equal(
    { ...settings.data, guard: undefined, guardNames: undefined },
    { ...docs.data, guard: undefined, guardNames: undefined },
    'the names and the command',
  );
  const text = kustomize(join(root, 'drainguard'));
  const result = check(text, 'shapes-system');
  assert.is(result.code, 0, result.out);
  // The control: without guard-more the same render is not complete, and check says so.
  const kustomization = parse(readFileSync(join(root, 'drainguard/kustomization.yaml'), 'utf8'));
  kustomization.components = kustomization.components.filter((c: string) => !c.endsWith('guard-more'));
  writeFileSync(join(root, 'drainguard/kustomization.yaml'), stringify(kustomization));
  const without = check(kustomize(join(root, 'drainguard')), 'shapes-system');
  assert.is(without.code, 1, without.out);
  assert.match(without.out, /binding-not-guarded|role-not-guarded|aggregation-source-not-guarded/);
});

test('a command of several words: the wrap patch puts all of them after --', () => {
  const { root, input } = exampleFile((objects) => {
    theManager(objects).command = ['/manager', 'controller'];
    return objects;
  });
  const run = adoptManifest(input);
  assert.is(run.code, 0, run.stdout + run.stderr);
  const manager = theManager(parseObjects(kustomize(join(root, 'drainguard'))));
  assert.equal(manager.command, ['/drainguard/drainguard', 'run', '--', '/manager', 'controller']);
  assert.equal(manager.args, ['--leader-elect', '--health-probe-bind-address=:8081']);
});

test("a pod without a token: native-sidecar, with a token in drainguard's container alone; check finds nothing", () => {
  const { root, input } = exampleFile((objects) => {
    objects.find((o) => o.kind === 'Deployment')!.spec.template.spec.automountServiceAccountToken = false;
    return objects;
  });
  const run = adoptManifest(input);
  assert.is(run.code, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /\(native-sidecar mode\)/);
  const text = kustomize(join(root, 'drainguard'));
  const pod = parseObjects(text).find((o) => o.kind === 'Deployment')!.spec.template.spec;
  const sidecar = pod.initContainers.find((c: any) => c.name === 'drainguard');
  assert.ok(sidecar.volumeMounts.some((m: any) => m.mountPath === '/var/run/secrets/kubernetes.io/serviceaccount'));
  assert.not.ok(JSON.stringify(pod.containers).includes('drainguard-token'), 'not in the operator');
  assert.is(check(text, 'example-system').code, 0);
});

test('a sidecar mode, the operator running as another user: drainguard runs as that user', () => {
  const { root, input } = exampleFile((objects) => {
    objects.find((o) => o.kind === 'Deployment')!.spec.template.spec.securityContext.runAsUser = 1000;
    return objects;
  });
  const run = adoptManifest(input, ['--mode', 'sidecar']);
  assert.is(run.code, 0, run.stdout + run.stderr);
  const text = kustomize(join(root, 'drainguard'));
  const pod = parseObjects(text).find((o) => o.kind === 'Deployment')!.spec.template.spec;
  assert.equal(pod.containers.find((c: any) => c.name === 'drainguard').securityContext.runAsUser, 1000);
  assert.is(check(text, 'example-system').code, 0);
});

test('run twice: the second run changes nothing and says so; --dry-run writes nothing, the run after it writes', () => {
  const { root, input } = exampleDir();
  const dry = adoptManifest(input, ['--dry-run']);
  assert.is(dry.code, 0, dry.stdout + dry.stderr);
  assert.match(dry.stdout, /would change \(--dry-run: nothing written\):/);
  assert.match(dry.stdout, /no findings/);
  assert.not.ok(existsSync(join(root, 'drainguard')), 'nothing written');
  assert.is(adoptManifest(input).code, 0);
  const once = treeDigest(root);
  const again = adoptManifest(input);
  assert.is(again.code, 0, again.stdout + again.stderr);
  assert.match(again.stdout, /nothing to change: the overlay is as adopt writes it/);
  assert.is(treeDigest(root), once, 'byte for byte as the first run left it');
});

test('a Job beside the operator, bound like it: left as it is, said so; the Deployment adopted', () => {
  const { root, input } = exampleFile((objects) => {
    const pod = structuredClone(deployment(objects).spec.template);
    pod.spec.restartPolicy = 'Never';
    const job = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'cleanup', namespace: 'example-system' },
      spec: { template: pod },
    };
    return [...objects, job];
  });
  const run = adoptManifest(input);
  assert.is(run.code, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /= Job cleanup: runs to completion, no operator to drain/);
  const job = parseObjects(kustomize(join(root, 'drainguard'))).find((o) => o.kind === 'Job')!;
  assert.not.ok(JSON.stringify(job).includes('/drainguard/'), 'the Job has no drainguard');
});

test('--out: the overlay where it is asked for, with the paths from there', () => {
  const { root, input } = exampleDir();
  const run = adoptManifest(input, ['--out', join(root, 'deep/er/overlay')]);
  assert.is(run.code, 0, run.stdout + run.stderr);
  assert.equal(parseObjects(kustomize(join(root, 'deep/er/overlay'))).length, rendered('wrap').length);
});

const REFUSED: Record<string, { edit: (objects: KubeObject[]) => KubeObject[]; args?: string[]; message: RegExp }> = {
  'a StatefulSet as the operator': {
    edit: (objects) => {
      const d = deployment(objects);
      d.kind = 'StatefulSet';
      d.spec.serviceName = d.metadata.name;
      return objects;
    },
    message: /the StatefulSet example-operator .*a Deployment only: the Helm library chart .*"Adding drainguard to any other operator"/,
  },
  'two Deployments': {
    edit: (objects) => [
      ...objects,
      { ...structuredClone(deployment(objects)), metadata: { ...deployment(objects).metadata, name: 'webhook' } },
    ],
    message: /2 Deployments \(example-operator, webhook\).*one kustomization per Deployment/,
  },
  'a container not named manager': {
    edit: (objects) => {
      theManager(objects).name = 'operator';
      return objects;
    },
    message: /containers are operator, .*by its name, manager.*replace manager .*step 3/,
  },
  'a Deployment that names no namespace': {
    edit: (objects) => objects.map((o) => (o.kind === 'Deployment' ? { ...o, metadata: { ...o.metadata, namespace: undefined } } : o)),
    message: /names no namespace.*set metadata.namespace/,
  },
  'a pod without a token, in wrap mode asked for': {
    edit: (objects) => {
      deployment(objects).spec.template.spec.automountServiceAccountToken = false;
      return objects;
    },
    args: ['--mode', 'wrap'],
    message: /mounts no ServiceAccount token .*--mode native-sidecar/,
  },
  "a container's own preStop hook, in a sidecar mode": {
    edit: (objects) => {
      theManager(objects).lifecycle = { preStop: { sleep: { seconds: 5 } } };
      return objects;
    },
    args: ['--mode', 'native-sidecar'],
    message: /preStop hook of its own.*step 3/,
  },
  'no role bound': {
    edit: (objects) => objects.filter((o) => o.kind !== 'ClusterRoleBinding'),
    message: /no Deployment whose ServiceAccount they bind to a role/,
  },
  'Roles only, no ClusterRoleBinding': {
    edit: (objects) =>
      objects.map((o) =>
        o.kind === 'ClusterRoleBinding'
          ? { ...o, kind: 'RoleBinding', metadata: { ...o.metadata, namespace: 'example-system' }, roleRef: { ...o.roleRef, kind: 'Role' } }
          : o.kind === 'ClusterRole'
            ? { ...o, kind: 'Role', metadata: { ...o.metadata, namespace: 'example-system' } }
            : o,
      ),
    message: /no ClusterRole of their own with a ClusterRoleBinding.*"A namespace-scoped project"/,
  },
};

for (const [name, { edit, args = [], message }] of Object.entries(REFUSED)) {
  test(`refused: ${name}, with the step to do by hand; nothing written`, () => {
    const { root, input } = exampleFile(edit);
    const before = treeDigest(root);
    const run = adoptManifest(input, args);
    assert.is(run.code, 1, run.stdout + run.stderr);
    assert.match(run.stderr, /DG_ADOPT_REFUSED: /);
    assert.match(run.stderr, message);
    assert.match(run.stderr, /nothing is written/);
    assert.is(treeDigest(root), before, 'the directory byte for byte as it was');
  });
}

test("refused: an overlay that has drainguard already, and an --out that is not adopt's; nothing written", () => {
  const { root, input } = exampleDir();
  assert.is(adoptManifest(input).code, 0);
  const before = treeDigest(join(root, 'drainguard'));
  const twice = adoptManifest(join(root, 'drainguard'), ['--out', join(root, 'again')]);
  assert.is(twice.code, 1, twice.stderr);
  assert.match(twice.stderr, /has drainguard already/);
  cpSync(join(ROOT, 'deploy/examples/wrap'), join(root, 'theirs'), { recursive: true });
  const theirs = treeDigest(join(root, 'theirs'));
  const taken = adoptManifest(input, ['--out', join(root, 'theirs')]);
  assert.is(taken.code, 1, taken.stderr);
  assert.match(taken.stderr, /exists and is not an overlay adopt wrote/);
  assert.is(treeDigest(join(root, 'theirs')), theirs);
  assert.not.ok(existsSync(join(root, 'again')));
  assert.is(treeDigest(join(root, 'drainguard')), before, 'the first overlay as it was');
});

test('usage errors exit 2: not a manifest, a directory of neither kind, no kubectl', () => {
  const root = scratch();
  writeFileSync(join(root, 'notes.txt'), 'x');
  const notManifest = adoptManifest(join(root, 'notes.txt'));
  assert.is(notManifest.code, 2, notManifest.stderr);
  assert.match(notManifest.stderr, /DG_ADOPT_INPUT: .*not a manifest file/);
  const neither = adoptManifest(root);
  assert.is(neither.code, 2);
  assert.match(neither.stderr, /neither a chart \(Chart.yaml\) nor a kustomize directory/);
  const { input } = exampleDir();
  const noKubectl = adoptManifest(input, ['--kubectl', '/nonexistent/kubectl']);
  assert.is(noKubectl.code, 2);
  assert.match(noKubectl.stderr, /DG_ADOPT_INPUT: kubectl not found \("\/nonexistent\/kubectl"\)/);
});

test.run();
