// The repository's Go modules as a Go module proxy serves them
// (https://go.dev/ref/mod#goproxy-protocol): for each module,
// MODULE/@v/list, VERSION.info, VERSION.mod and VERSION.zip, the zip in the
// module zip format (every path under MODULE@VERSION/; the module's own
// files: a subdirectory with a go.mod of its own is another module and
// stays out). A directory laid out so is a GOPROXY=file:///DIR, which is how
// the tests fetch the modules the way a user's `go get` does; and h1 is the
// checksum Go records in go.sum for them (the checksum database's hash).

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import { zip } from './zip.ts';

export interface GoModule {
  /** Module path, from its go.mod. */
  readonly path: string;
  /** Its directory, relative to the repository, slash-separated. */
  readonly dir: string;
}

/** The Go modules of the repository: the standard-library client and the controller-runtime one. */
export const GO_MODULE_DIRS = ['clients/go', 'clients/go/ctrl'] as const;

export function goModule(root: string, dir: string): GoModule {
  const path = /^module\s+(\S+)/m.exec(readFileSync(join(root, dir, 'go.mod'), 'utf8'))?.[1];
  if (path === undefined) throw new Error(`${dir}/go.mod names no module`);
  return { path, dir };
}

/** The module's files, relative to its directory: tracked by git (as a tag holds them) when in git, else all. */
export function moduleFiles(root: string, { dir }: GoModule): string[] {
  let files: string[];
  try {
    files = execFileSync('git', ['-C', root, 'ls-files', '-z', '--', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .split('\0')
      .filter((f) => f !== '' && existsSync(join(root, f)))
      .map((f) => posix.relative(dir, f));
  } catch {
    files = walk(join(root, dir)).map((f) => relative(join(root, dir), f).split('\\').join('/'));
  }
  const nested = new Set(files.filter((f) => f !== 'go.mod' && f.endsWith('/go.mod')).map((f) => posix.dirname(f)));
  const inNested = (f: string) => [...nested].some((d) => f.startsWith(`${d}/`));
  return files.filter((f) => !inNested(f) && !f.split('/').includes('vendor') && !f.split('/').includes('.git')).sort();
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : [],
  );
}

/** Go's case-encoding of module paths in the module cache and proxies: an upper-case letter is ! and its lower case. */
export const escapePath = (path: string): string => path.replace(/[A-Z]/g, (c) => `!${c.toLowerCase()}`);

/** dirhash.Hash1: the base64 SHA-256 of the lines "SHA256HEX  NAME\n" of every file, sorted by name. */
export function hash1(files: ReadonlyMap<string, Buffer>): string {
  const summary = [...files.keys()]
    .sort()
    .map((name) => `${createHash('sha256').update(files.get(name)!).digest('hex')}  ${name}\n`)
    .join('');
  return `h1:${createHash('sha256').update(summary).digest('base64')}`;
}

export interface ModuleVersion {
  readonly module: GoModule;
  readonly version: string;
  readonly zip: Buffer;
  readonly mod: Buffer;
  /** go.sum's two lines for it. */
  readonly sum: string;
}

/** The module at VERSION as a proxy serves it, from the files in the working tree. */
export function moduleVersion(root: string, module: GoModule, version: string, time: Date): ModuleVersion {
  const prefix = `${module.path}@${version}/`;
  const contents = new Map(moduleFiles(root, module).map((f) => [`${prefix}${f}`, readFileSync(join(root, module.dir, f))]));
  const mod = readFileSync(join(root, module.dir, 'go.mod'));
  const entries = [...contents.entries()].map(([name, data]) => ({ name, data }));
  const sum = `${module.path} ${version} ${hash1(contents)}\n${module.path} ${version}/go.mod ${hash1(new Map([['go.mod', mod]]))}\n`;
  return { module, version, zip: zip(entries, time), mod, sum };
}

/** Writes the modules at VERSION into DIR as a GOPROXY tree; returns them. */
export function writeProxy(dir: string, root: string, version: string, time: Date): ModuleVersion[] {
  return GO_MODULE_DIRS.map((d) => {
    const m = moduleVersion(root, goModule(root, d), version, time);
    const base = join(dir, escapePath(m.module.path), '@v');
    mkdirSync(base, { recursive: true });
    writeFileSync(join(base, 'list'), `${version}\n`);
    writeFileSync(
      join(base, `${version}.info`),
      `${JSON.stringify({ Version: version, Time: time.toISOString().replace(/\.000Z$/, 'Z') })}\n`,
    );
    writeFileSync(join(base, `${version}.mod`), m.mod);
    writeFileSync(join(base, `${version}.zip`), m.zip);
    return m;
  });
}
