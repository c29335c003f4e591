// Every artifact of a release, from a clean checkout, into one folder:
//
//   npm run release [-- --out DIR] [--push] [--allow-dirty] [--skip-build]
//
// dist/release/vVERSION/ (VERSION from package.json, the one source):
//   drainguard-VERSION-linux-amd64, drainguard-VERSION-linux-arm64   the executables
//                                                 (each is kubebuilder's plugin too: drainguard kubebuilder-plugin install)
//   drainguard-VERSION-linux-ARCH.cdx.json        their SBOMs (CycloneDX): Node.js and the bundled npm packages
//   drainguard-VERSION-image.oci.tar              the image, linux/amd64 + linux/arm64 and their index, an OCI archive
//   drainguard-VERSION.tgz                        the library chart (helm package), version and appVersion VERSION
//   drainguard-VERSION-kustomize-components.tar.gz  deploy/components
//   drainguard-client-VERSION.tgz                 the npm package @drainguard/client (npm pack)
//   SHA256SUMS                                    of all of the above
// and the image as the manifest list localhost/drainguard:VERSION in podman's storage.
//
// Every file that names the version must name package.json's
// (scripts/set-version.ts sets them all). Reproducible: every time in them is the commit's (SOURCE_DATE_EPOCH, when
// not given), the build stamps the commit, not the time. A tree that differs
// from its commit is refused (its executables would say -dirty), unless
// --allow-dirty. --skip-build takes the executables already in dist/ (npm
// test has just built them). --push then publishes the image and the chart to
// the OCI registry $DRAINGUARD_REGISTRY (scripts/release/publish.ts).

import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { execa } from 'execa';
import { OCI_ARCH, buildManifest } from './build-image.ts';
import { emulated } from './emulation.ts';
import { sha256File, tarContents, tarGz, writeChecksums } from './release/archive.ts';
import { PublishError, publish, registryFrom } from './release/publish.ts';
import { bundledPackages, sbom } from './release/sbom.ts';
import { packClientPackage, stageClientPackage } from './release/ts-client.ts';
import { versionMentions } from './release/versions.ts';
import { helmPath } from '../test/support/helm.ts';
import { commitOf, commitTime, packageVersion } from '../sidecar/build/stamp.ts';
import { type Arch, TARGETS, executablePath, isNative } from '../sidecar/build/targets.ts';

const ROOT = resolve(fileURLToPath(import.meta.url), '../..');

export interface ReleaseOptions {
  readonly root?: string;
  /** Default dist/release/vVERSION. Emptied first. */
  readonly out?: string;
  /** The local manifest list; default localhost/drainguard:VERSION. */
  readonly imageTag?: string;
  readonly allowDirty?: boolean;
  readonly skipBuild?: boolean;
  /** Progress lines; default stdout. */
  readonly log?: (line: string) => void;
}

export interface Release {
  readonly version: string;
  readonly commit: string;
  readonly epoch: number;
  readonly out: string;
  readonly imageTag: string;
  /** File name → its role. */
  readonly files: Readonly<Record<string, string>>;
}

export const artifactNames = (version: string) => ({
  executable: (arch: Arch) => `drainguard-${version}-linux-${OCI_ARCH[arch]}`,
  sbom: (arch: Arch) => `drainguard-${version}-linux-${OCI_ARCH[arch]}.cdx.json`,
  image: `drainguard-${version}-image.oci.tar`,
  chart: `drainguard-${version}.tgz`,
  components: `drainguard-${version}-kustomize-components.tar.gz`,
  client: `drainguard-client-${version}.tgz`,
});

export class ReleaseError extends Error {}

export async function release(options: ReleaseOptions = {}): Promise<Release> {
  const root = options.root ?? ROOT;
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const version = packageVersion(root);
  const commit = commitOf(root);
  if (commit.endsWith('-dirty') && !options.allowDirty) {
    throw new ReleaseError(
      `the tree differs from its commit (git status --porcelain lists files): a release is built from a commit; --allow-dirty to try one anyway`,
    );
  }
  const disagree = versionMentions(root).filter((m) => m.version !== version);
  if (disagree.length > 0) {
    throw new ReleaseError(
      `package.json says ${version}, but ${disagree.map((m) => `${m.file}:${m.line} (${m.what}) says ${m.version}`).join(', ')}: node scripts/set-version.ts ${version}`,
    );
  }
  const epoch = Number(process.env.SOURCE_DATE_EPOCH ?? commitTime(root) ?? 0);
  const time = new Date(epoch * 1000);
  const out = options.out ?? join(root, 'dist/release', `v${version}`);
  const imageTag = options.imageTag ?? `localhost/drainguard:${version}`;
  const names = artifactNames(version);
  const archs = Object.keys(TARGETS) as Arch[];
  const files: Record<string, string> = {};
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  log(`drainguard ${version}, commit ${commit}, SOURCE_DATE_EPOCH=${epoch}, into ${out}`);

  if (!options.skipBuild) {
    execFileSync(process.execPath, [join(root, 'sidecar/build.ts'), '--arch', 'all'], {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, SOURCE_DATE_EPOCH: String(epoch) },
    });
  }
  const packages = await bundledPackages(root);
  for (const arch of archs) {
    const file = names.executable(arch);
    copyFileSync(executablePath(root, arch), join(out, file));
    chmodSync(join(out, file), 0o755);
    await checkVersion(join(out, file), arch, version, commit);
    files[file] = `the executable, linux/${OCI_ARCH[arch]}`;
    const doc = sbom({ root, version, commit, arch, file, sha256: sha256File(join(out, file)), time, packages });
    writeFileSync(join(out, names.sbom(arch)), `${JSON.stringify(doc, null, 2)}\n`);
    files[names.sbom(arch)] = `its SBOM (CycloneDX 1.5): Node.js and ${packages.length} bundled npm packages`;
  }

  // The image from the released executables, then the list and both images as one OCI archive.
  await buildManifest(imageTag, archs, Object.fromEntries(archs.map((a) => [a, join(out, names.executable(a))])));
  // Through an OCI layout, archived here: podman's oci-archive dates its tar entries now (the images in it are the same every time).
  const layout = mkdtempSync(join(tmpdir(), 'drainguard-oci-'));
  try {
    await execa('podman', ['manifest', 'push', '--quiet', '--all', '--format', 'oci', imageTag, `oci:${layout}:${version}`]);
    tarContents(layout, join(out, names.image), epoch);
  } finally {
    rmSync(layout, { recursive: true, force: true });
  }
  files[names.image] = `the image (${archs.map((a) => `linux/${OCI_ARCH[a]}`).join(', ')}), OCI archive; locally ${imageTag}`;

  const helm = helmPath();
  const chartWork = mkdtempSync(join(tmpdir(), 'drainguard-chart-'));
  try {
    // From a copy: helm package would leave charts/ and Chart.lock behind in the tree.
    cpSync(join(root, 'deploy/helm/drainguard'), join(chartWork, 'drainguard'), { recursive: true });
    execFileSync(
      helm,
      [
        'package',
        join(chartWork, 'drainguard'),
        '--version',
        version,
        '--app-version',
        version,
        '--destination',
        join(chartWork, 'packaged'),
      ],
      {
        stdio: ['ignore', 'ignore', 'inherit'],
        env: {
          ...process.env,
          HELM_CONFIG_HOME: join(chartWork, 'config'),
          HELM_CACHE_HOME: join(chartWork, 'cache'),
          HELM_DATA_HOME: join(chartWork, 'data'),
        },
      },
    );
    // helm package dates the files now: the same files again, dated the commit's time.
    mkdirSync(join(chartWork, 'unpacked'));
    execFileSync('tar', ['-xzf', join(chartWork, 'packaged', names.chart), '-C', join(chartWork, 'unpacked')]);
    tarGz(join(chartWork, 'unpacked/drainguard'), join(out, names.chart), epoch);
  } finally {
    rmSync(chartWork, { recursive: true, force: true });
  }
  files[names.chart] = 'the library chart drainguard (helm package)';

  tarGz(join(root, 'deploy/components'), join(out, names.components), epoch);
  files[names.components] = 'the kustomize components (deploy/components)';

  const clientWork = mkdtempSync(join(tmpdir(), 'drainguard-client-'));
  try {
    await stageClientPackage(root, join(clientWork, 'package'), version);
    copyFileSync(packClientPackage(join(clientWork, 'package'), clientWork), join(out, names.client));
  } finally {
    rmSync(clientWork, { recursive: true, force: true });
  }
  files[names.client] = 'the npm package @drainguard/client';

  writeChecksums(out);
  files.SHA256SUMS = 'SHA-256 of every file above';
  const unexpected = readdirSync(out).filter((f) => !(f in files));
  if (unexpected.length > 0) throw new ReleaseError(`unexpected files in ${out}: ${unexpected.join(', ')}`);
  for (const [file, role] of Object.entries(files))
    log(`  ${file.padEnd(48)} ${String(statSync(join(out, file)).size).padStart(10)}  ${role}`);
  return { version, commit, epoch, out, imageTag, files };
}

/** The executable says this version and commit (the arm64 one under qemu-user). */
async function checkVersion(file: string, arch: Arch, version: string, commit: string): Promise<void> {
  const [cmd, ...args] = isNative(arch) ? [file, '--version'] : emulated(arch, [file, '--version']);
  const { stdout } = await execa(cmd!, args, { timeout: 60_000 });
  if (!stdout.startsWith(`drainguard ${version} commit ${commit} `))
    throw new ReleaseError(`${file} --version says ${JSON.stringify(stdout)}; expected drainguard ${version} commit ${commit}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      out: { type: 'string' },
      push: { type: 'boolean', default: false },
      'allow-dirty': { type: 'boolean', default: false },
      'skip-build': { type: 'boolean', default: false },
    },
  });
  try {
    const registry = values.push ? registryFrom(process.env) : undefined;
    const r = await release({
      ...(values.out ? { out: resolve(values.out) } : {}),
      allowDirty: values['allow-dirty'],
      skipBuild: values['skip-build'],
    });
    if (registry) await publish(r, registry, (line) => process.stdout.write(`${line}\n`));
  } catch (err) {
    if (!(err instanceof ReleaseError) && !(err instanceof PublishError)) throw err;
    process.stderr.write(`release: ${err.message}\n`);
    process.exitCode = 2;
  }
}
