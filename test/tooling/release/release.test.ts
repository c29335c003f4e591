// The release (scripts/release.ts) and its push half (scripts/release/publish.ts),
// checked as a user meets them: the folder and its SHA256SUMS, the SBOM, the
// chart and the image archive; then pushed to a real registry on loopback
// (Debian's docker-registry) and fetched back with podman (both architectures of
// the manifest list) and helm (helm pull, and helm dependency update of an
// operator's chart that depends on the library chart by oci://).
// The executables are the ones in dist/ (npm test has just built both).

import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execa } from 'execa';
import { artifactNames, release, type Release } from '../../../scripts/release.ts';
import { publish } from '../../../scripts/release/publish.ts';
import { commitOf, packageVersion } from '../../../sidecar/build/stamp.ts';
import { cleanupHelm, helm } from '../../support/helm.ts';
import { tempDir } from '../../support/proc.ts';
import { within } from '../../support/wait.ts';
import { AARCH64, elfMachine } from '../arm64/support/arm64.ts';
import { type Registry, startRegistry } from './support/registry.ts';

const ROOT = resolve('.');
const VERSION = packageVersion(ROOT);
const names = artifactNames(VERSION);
const imageTag = `localhost/drainguard-release-test:${process.pid}-${Date.now()}`;
// helm push (in publish) with helm homes of its own, as test/support/helm.ts gives every other helm here.
const helmHome = tempDir();
Object.assign(process.env, {
  HELM_CONFIG_HOME: join(helmHome, 'config'),
  HELM_CACHE_HOME: join(helmHome, 'cache'),
  HELM_DATA_HOME: join(helmHome, 'data'),
});

let registry: Registry | undefined;
let built: Release;

test.before(async () => {
  built = await within(
    180_000,
    'the release',
    release({ root: ROOT, out: join(tempDir(), `v${VERSION}`), imageTag, skipBuild: true, allowDirty: true, log: () => {} }),
  );
});

test.after(async () => {
  await registry?.stop();
  await execa('podman', ['manifest', 'rm', imageTag], { reject: false });
  await execa('podman', ['rmi', '--force', `${imageTag}-amd64`, `${imageTag}-arm64`], { reject: false });
  cleanupHelm();
});

const tarFile = (archive: string, name: string) => execFileSync('tar', ['-xOf', archive, name], { maxBuffer: 1 << 26 });

interface OciIndex {
  manifests: { digest: string; mediaType: string; platform?: { os: string; architecture: string } }[];
}

/** The image archive's manifest list: architecture → manifest digest. */
function archivedManifests(archive: string): Record<string, string> {
  const top = JSON.parse(tarFile(archive, 'index.json').toString()) as OciIndex;
  assert.is(top.manifests.length, 1);
  const list = JSON.parse(tarFile(archive, `blobs/sha256/${top.manifests[0]!.digest.slice('sha256:'.length)}`).toString()) as OciIndex;
  return Object.fromEntries(list.manifests.map((m) => [`${m.platform!.os}/${m.platform!.architecture}`, m.digest]));
}

test('one folder: every artifact named with the version, SHA256SUMS checks', () => {
  const expected = [
    names.executable('x64'),
    names.executable('arm64'),
    names.sbom('x64'),
    names.sbom('arm64'),
    names.image,
    names.chart,
    names.components,
    names.client,
    'SHA256SUMS',
  ].sort();
  assert.equal(readdirSync(built.out).sort(), expected);
  assert.equal(Object.keys(built.files).sort(), expected);
  const check = execFileSync('sha256sum', ['--check', '--strict', 'SHA256SUMS'], { cwd: built.out, encoding: 'utf8' });
  assert.is(check.trim().split('\n').length, expected.length - 1);
  const amd64 = execFileSync(join(built.out, names.executable('x64')), ['--version'], { encoding: 'utf8' });
  assert.ok(amd64.startsWith(`drainguard ${VERSION} commit ${commitOf(ROOT)} (node ${process.version})`), amd64);
  assert.is(elfMachine(join(built.out, names.executable('arm64'))), AARCH64);
});

test("the executable is kubebuilder's plugin: kubebuilder-plugin install, then the plugin answers kubebuilder's request", () => {
  const exe = join(built.out, names.executable('x64'));
  const plugins = tempDir();
  execFileSync(exe, ['kubebuilder-plugin', 'install', plugins], { encoding: 'utf8', timeout: 30_000 });
  const plugin = join(plugins, 'drainguard.dev/v1-alpha/drainguard.dev');
  assert.ok(readFileSync(plugin, 'utf8').includes(`'${exe}' kubebuilder-plugin`), 'it runs the released executable');
  const request = { apiVersion: 'v1alpha1', command: 'flags', args: ['--edit'], universe: {} };
  const answer = JSON.parse(execFileSync(plugin, [], { input: JSON.stringify(request), encoding: 'utf8', timeout: 30_000 }));
  assert.equal(
    answer.flags.map((f: { Name: string }) => f.Name),
    ['mode'],
  );
});

test('the SBOM: CycloneDX, the Node.js runtime and every runtime dependency bundled, with versions and hashes', () => {
  const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, { version: string }> };
  const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string> };
  for (const arch of ['x64', 'arm64'] as const) {
    const doc = JSON.parse(readFileSync(join(built.out, names.sbom(arch)), 'utf8')) as {
      bomFormat: string;
      specVersion: string;
      metadata: { timestamp: string; component: { version: string; hashes: { content: string }[] } };
      components: { name: string; version: string; purl: string; type: string; hashes: unknown[] }[];
    };
    assert.is(doc.bomFormat, 'CycloneDX');
    assert.is(doc.specVersion, '1.5');
    assert.is(doc.metadata.component.version, VERSION);
    assert.is(doc.metadata.timestamp, new Date(built.epoch * 1000).toISOString().replace('.000Z', 'Z'));
    const sums = readFileSync(join(built.out, 'SHA256SUMS'), 'utf8');
    assert.ok(
      sums.includes(`${doc.metadata.component.hashes[0]!.content}  ${names.executable(arch)}\n`),
      'the SBOM names the executable by its SHA-256',
    );
    const runtime = doc.components.find((c) => c.type === 'platform')!;
    assert.equal([runtime.name, runtime.version], [`node-linux-${arch}`, process.versions.node]);
    for (const dep of Object.keys(pkg.dependencies)) {
      const c = doc.components.find((x) => x.name === dep);
      assert.ok(c, `${dep} is in the SBOM`);
      assert.is(c!.version, lock.packages[`node_modules/${dep}`]!.version);
      assert.is(c!.purl, `pkg:npm/${dep}@${c!.version}`);
      assert.is(c!.hashes.length, 1, `${dep} has its hash`);
    }
  }
});

test('the chart is stamped with the version, the components archive holds every component, the image archive both architectures', () => {
  const chart = helm(['show', 'chart', join(built.out, names.chart)]);
  assert.match(chart, new RegExp(`^version: ${VERSION.replaceAll('.', '\\.')}$`, 'm'));
  assert.match(chart, new RegExp(`^appVersion: ${VERSION.replaceAll('.', '\\.')}$`, 'm'));
  const components = execFileSync('tar', ['-tzf', join(built.out, names.components)], { encoding: 'utf8' })
    .trim()
    .split('\n');
  for (const c of readdirSync('deploy/components')) assert.ok(components.includes(`components/${c}/kustomization.yaml`), c);
  assert.equal(Object.keys(archivedManifests(join(built.out, names.image))).sort(), ['linux/amd64', 'linux/arm64']);
});

test('pushed to a registry: podman pulls both architectures of the list, helm pulls the chart', async () => {
  registry = await startRegistry();
  const repository = `${registry.host}/drainguard`;
  const published = await within(120_000, 'the push', publish(built, { repository, plainHttp: true }));
  const archived = archivedManifests(join(built.out, names.image));
  const listDigest = published.image.split('@')[1];
  assert.is(published.image, `${repository}/drainguard:${VERSION}@${listDigest}`);

  for (const arch of ['amd64', 'arm64']) {
    const pull = await execa('podman', ['pull', '--quiet', '--tls-verify=false', '--arch', arch, `${repository}/drainguard:${VERSION}`], {
      timeout: 120_000,
    });
    const id = pull.stdout.trim().split('\n').pop()!;
    const [info] = JSON.parse((await execa('podman', ['image', 'inspect', id])).stdout) as [
      { Architecture: string; Os: string; RepoDigests: string[]; Config: { User: string; Labels: Record<string, string> } },
    ];
    assert.equal([info.Os, info.Architecture], ['linux', arch]);
    // (The same image, built here, may already be in podman's storage under another name: its own Digest is not the pulled one.)
    assert.ok(
      info.RepoDigests.includes(`${repository}/drainguard@${archived[`linux/${arch}`]}`),
      `the pulled linux/${arch} image is the archived one: ${info.RepoDigests.join(' ')}`,
    );
    assert.is(info.Config.User, '65532:65532');
    assert.is(info.Config.Labels['org.opencontainers.image.version'], VERSION);
    assert.is(info.Config.Labels['org.opencontainers.image.revision'], commitOf(ROOT, 40));
    // By name, never by id: the same image (reproducible, so the same id) may be another test's under its own name.
    await execa('podman', ['rmi', `${repository}/drainguard:${VERSION}`]);
  }

  assert.is(published.chart, `oci://${repository}/charts/drainguard`);
  const into = tempDir();
  helm(['pull', published.chart, '--version', VERSION, '--plain-http', '--destination', into]);
  assert.ok(readFileSync(join(into, names.chart)).equals(readFileSync(join(built.out, names.chart))), 'helm pull gives the released chart');
});

test('an operator chart that depends on the library chart by oci:// (helm dependency update), and renders', () => {
  assert.ok(registry, 'the registry of the test before');
  const chart = join(tempDir(), 'example-operator');
  cpSync('deploy/helm/example-operator', chart, { recursive: true, filter: (src) => !/\/(charts|Chart\.lock)$/.test(src) });
  const manifest = readFileSync(join(chart, 'Chart.yaml'), 'utf8');
  const rewritten = manifest
    .replace(/repository: file:\/\/\.\.\/drainguard/, `repository: oci://${registry!.host}/drainguard/charts`)
    .replace(/(- name: drainguard\n\s+version: )\S+/, `$1${VERSION}`);
  assert.not.equal(rewritten, manifest);
  writeFileSync(join(chart, 'Chart.yaml'), rewritten);
  helm(['dependency', 'update', '--plain-http', chart]);
  assert.ok(existsSync(join(chart, 'charts', names.chart)), `charts/${names.chart}`);
  const rendered = helm(['template', 'demo', chart]);
  assert.match(rendered, new RegExp(`image: "?ghcr\\.io/drainguard/drainguard:${VERSION.replaceAll('.', '\\.')}"?`));
});

test.run();
