// What `install` copies: the executable and everything it needs to start,
// found from the running drainguard itself.
//  - Started as DIR/drainguard (the launcher): DIR/lib as it is.
//  - Started as the bare executable (dist/drainguard): the libraries the
//    system's dynamic loader resolves for it, asked the way ldd asks
//    (LD_TRACE_LOADED_OBJECTS), so each is named as the executable asks for it.

import { readdirSync, realpathSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { isSea } from 'node:sea';
import { execa } from 'execa';
import { DrainguardError } from '../errors.ts';
import { LIB_DIR, LOADER, PROGRAM, installedDir } from './layout.ts';

export interface SourceFile {
  /** Where the file is now. */
  readonly from: string;
  /** Where it goes, relative to DIR. */
  readonly to: string;
  readonly mode: number;
}

/** Nothing usable to install from: not the executable, or a system that cannot provide what it needs. */
export class InstallSourceError extends DrainguardError {
  override name = 'InstallSourceError';
  constructor(message: string, code: 'DG_INSTALL_SOURCE' | 'DG_INSTALL_COPY' = 'DG_INSTALL_SOURCE') {
    super(code, message);
  }
}

const EXECUTABLE = 0o755;
const LIBRARY = 0o644;

export async function installSources(): Promise<SourceFile[]> {
  const dir = installedDir();
  if (dir !== undefined) return fromInstalledDir(dir);
  if (!isSea()) {
    throw new InstallSourceError(
      'install copies the drainguard executable, and this is not it (run dist/drainguard install DIR, not the sources)',
    );
  }
  return fromBareExecutable(realpathSync(process.execPath));
}

function fromInstalledDir(dir: string): SourceFile[] {
  const lib = join(dir, LIB_DIR);
  return readdirSync(lib)
    .filter((name) => statSync(join(lib, name)).isFile())
    .sort()
    .map((name) => {
      const to = join(LIB_DIR, name);
      return { from: join(lib, name), to, mode: to === PROGRAM || to === LOADER ? EXECUTABLE : LIBRARY };
    });
}

async function fromBareExecutable(program: string): Promise<SourceFile[]> {
  const traced = await execa(program, [], { env: { LD_TRACE_LOADED_OBJECTS: '1' }, reject: false, timeout: 30_000 });
  if (traced.exitCode !== 0) {
    throw new InstallSourceError(
      `the dynamic loader could not list what ${program} needs: ${traced.stderr || traced.stdout || traced.shortMessage}`,
    );
  }
  const { loader, libraries } = parseLoadedObjects(traced.stdout);
  await requireArgv0Option(loader);
  return [
    { from: program, to: PROGRAM, mode: EXECUTABLE },
    { from: realpathSync(loader), to: LOADER, mode: EXECUTABLE },
    ...libraries.map((l) => ({ from: realpathSync(l.path), to: join(LIB_DIR, l.name), mode: LIBRARY })),
  ];
}

export interface LoadedObjects {
  readonly loader: string;
  /** Each library under the name the executable asks for (its DT_NEEDED, normally the soname). */
  readonly libraries: readonly { readonly name: string; readonly path: string }[];
}

/**
 * Parses the list glibc's loader prints with LD_TRACE_LOADED_OBJECTS=1:
 *   linux-vdso.so.1 (0x...)                        (in the kernel: nothing to copy)
 *   libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)
 *   /lib64/ld-linux-x86-64.so.2 (0x...)             (the loader)
 */
export function parseLoadedObjects(text: string): LoadedObjects {
  let loader: string | undefined;
  const libraries: { name: string; path: string }[] = [];
  const missing: string[] = [];
  for (const line of text.split('\n').map((l) => l.trim())) {
    if (line === '') continue;
    const arrow = /^(\S+) => (.+?)(?: \(0x[0-9a-f]+\))?$/.exec(line);
    if (arrow) {
      const [, name, path] = arrow;
      if (path === 'not found') missing.push(name!);
      // The loader may be listed as a dependency too (libc needs it); it is copied once, under LOADER.
      else if (!/^ld-linux/.test(name!)) libraries.push({ name: name!, path: path! });
      continue;
    }
    const bare = /^(\/\S+) \(0x[0-9a-f]+\)$/.exec(line);
    if (bare) loader = bare[1];
  }
  if (missing.length > 0) throw new InstallSourceError(`the dynamic loader cannot find ${missing.join(', ')}`);
  if (loader === undefined || basename(loader) !== basename(LOADER)) {
    throw new InstallSourceError(`expected glibc's loader for ${process.arch} (${basename(LOADER)}) in the loader's list, got:\n${text}`);
  }
  return { loader, libraries };
}

/** The launcher passes --argv0 (glibc 2.33 and later); an older loader would refuse to start drainguard. */
async function requireArgv0Option(loader: string): Promise<void> {
  const help = await execa(loader, ['--help'], { reject: false, timeout: 30_000 });
  if (!help.stdout.includes('--argv0')) {
    throw new InstallSourceError(
      `the dynamic loader ${loader} does not take --argv0 (glibc 2.33 or later needed); ` +
        'install from a newer system or from the drainguard image',
    );
  }
}
