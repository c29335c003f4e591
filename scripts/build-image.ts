// Builds the drainguard image from the Containerfile: runs the built
// executable's `install` into a fresh build context, so the image holds
// exactly what `install` writes, then `podman build` (FROM scratch: no base
// image is pulled, and nothing runs in the image, so an arm64 image needs no
// emulation to build; only the arm64 `install` runs under qemu-user).
//
//   node scripts/build-image.ts [TAG]     default TAG: localhost/drainguard:VERSION
//
// makes TAG a manifest list of linux/amd64 and linux/arm64 (from
// dist/drainguard and dist/drainguard-linux-arm64), each image also tagged
// TAG-amd64 and TAG-arm64.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { commitOf, commitTime } from '../sidecar/build/stamp.ts';
import { type Arch, executablePath, isNative } from '../sidecar/build/targets.ts';
import { emulated } from './emulation.ts';

const ROOT = resolve(fileURLToPath(import.meta.url), '../..');
export const VERSION: string = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** The OCI name of each architecture. */
export const OCI_ARCH: Readonly<Record<Arch, string>> = { x64: 'amd64', arm64: 'arm64' };

export interface BuildImageOptions {
  readonly tag: string;
  /** Default: this machine's. */
  readonly arch?: Arch;
  /** The executable whose `install` fills the image; default the built one for ARCH. */
  readonly executable?: string;
  /** Seconds since the epoch: the image's creation time and its files' (podman build --timestamp); default the commit's. */
  readonly timestamp?: number;
}

/** The commit for the revision label: all its hex digits, and -dirty as --version says it. */
const revision = (): string => commitOf(ROOT, 40);

/** Builds the image for one architecture; resolves with its id. */
export async function buildImage({
  tag,
  arch = process.arch as Arch,
  executable = executablePath(ROOT, arch),
  timestamp = commitTime(ROOT) ?? 0,
}: BuildImageOptions): Promise<string> {
  const context = mkdtempSync(join(tmpdir(), 'drainguard-image-'));
  try {
    const install = [executable, 'install', '--log-level', 'warn', join(context, 'drainguard')];
    const [file, ...args] = isNative(arch) ? install : emulated(arch, install);
    await execa(file!, args);
    const built = await execa('podman', [
      'build',
      '--quiet',
      '--layers=false',
      '--platform',
      `linux/${OCI_ARCH[arch]}`,
      '-f',
      join(ROOT, 'Containerfile'),
      '-t',
      tag,
      '--timestamp',
      String(timestamp),
      '--build-arg',
      `VERSION=${VERSION}`,
      '--build-arg',
      `REVISION=${revision()}`,
      '--build-arg',
      `CREATED=${new Date(timestamp * 1000).toISOString().replace(/\.000Z$/, 'Z')}`,
      context,
    ]);
    return built.stdout.trim().split('\n').pop()!;
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}

/** Builds TAG as a manifest list of one image per architecture, each tagged TAG-ARCH; resolves with their tags. */
export async function buildManifest(
  tag: string,
  archs: readonly Arch[] = ['x64', 'arm64'],
  executables: Partial<Record<Arch, string>> = {},
): Promise<Record<string, string>> {
  const images: Record<string, string> = {};
  for (const arch of archs) images[OCI_ARCH[arch]] = `${tag}-${OCI_ARCH[arch]}`;
  await Promise.all(
    archs.map((arch) =>
      buildImage({ tag: images[OCI_ARCH[arch]]!, arch, ...(executables[arch] ? { executable: executables[arch] } : {}) }),
    ),
  );
  // A list of that name from an earlier build would otherwise keep its old entries.
  await execa('podman', ['manifest', 'rm', tag], { reject: false });
  await execa('podman', ['manifest', 'create', tag]);
  for (const image of Object.values(images)) await execa('podman', ['manifest', 'add', tag, `containers-storage:${image}`]);
  return images;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const tag = process.argv[2] ?? `localhost/drainguard:${VERSION}`;
  const images = await buildManifest(tag);
  process.stdout.write(
    `built ${tag}: ${Object.entries(images)
      .map(([arch, image]) => `linux/${arch} ${image}`)
      .join(', ')}\n`,
  );
}
