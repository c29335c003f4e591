// Builds the drainguard image from the Containerfile: runs the built
// executable's `install` into a fresh build context, so the image holds
// exactly what `install` writes, then `podman build` (FROM scratch: no base
// image is pulled).
//
//   node scripts/build-image.ts [TAG]     default TAG: localhost/drainguard:VERSION

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';

const ROOT = resolve(fileURLToPath(import.meta.url), '../..');
export const VERSION: string = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

export interface BuildImageOptions {
  readonly tag: string;
  /** The executable whose `install` fills the image; default dist/drainguard. */
  readonly executable?: string;
}

/** Builds the image; resolves with its id. */
export async function buildImage({ tag, executable = join(ROOT, 'dist/drainguard') }: BuildImageOptions): Promise<string> {
  const context = mkdtempSync(join(tmpdir(), 'drainguard-image-'));
  try {
    await execa(executable, ['install', '--log-level', 'warn', join(context, 'drainguard')]);
    const built = await execa('podman', ['build', '--quiet', '--layers=false', '-f', join(ROOT, 'Containerfile'), '-t', tag, '--build-arg', `VERSION=${VERSION}`, context]);
    return built.stdout.trim().split('\n').pop()!;
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const tag = process.argv[2] ?? `localhost/drainguard:${VERSION}`;
  const id = await buildImage({ tag });
  process.stdout.write(`built ${tag} (${id})\n`);
}
