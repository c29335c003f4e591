// The TypeScript client as users get it: the npm package @drainguard/client
// (scripts/release/ts-client.ts) packed with `npm pack`, installed offline
// from the tarball into a scratch project outside the repository (so it has
// no runtime dependency to fetch), type-checked there, and draining a demo
// operator under the built executable.

import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { packClientPackage, stageClientPackage } from '../../scripts/release/ts-client.ts';
import { packageVersion } from '../../sidecar/build/stamp.ts';
import { NODE, drainguard, tempDir } from '../support/proc.ts';

// npm (and tsc) would leave Node's compile cache in the test's TMPDIR.
process.env.NODE_DISABLE_COMPILE_CACHE = '1';
const ROOT = resolve('.');
const VERSION = packageVersion(ROOT);
const work = tempDir();
const pkg = await stageClientPackage(ROOT, join(work, 'package'), VERSION);
const tarball = packClientPackage(join(work, 'package'), join(work, 'packed'));
const NPM_MS = 120_000;

const project = join(tempDir(), 'scratch');
execFileSync('mkdir', ['-p', project]);
writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
// Its own npm cache: nothing comes from the developer's, and --offline makes any registry request fail.
const npm = (...args: string[]) =>
  execFileSync('npm', [...args, '--offline', '--no-audit', '--no-fund', '--cache', join(project, '..', 'npm-cache')], {
    cwd: project,
    encoding: 'utf8',
    timeout: NPM_MS,
    stdio: ['ignore', 'pipe', 'pipe'],
  });

test('the tarball: the version, the bundle, its declarations, the README; no dependencies', () => {
  assert.is(pkg.name, '@drainguard/client');
  assert.is(pkg.version, VERSION);
  const listing = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).trim().split('\n').sort();
  assert.equal(listing, ['package/README.md', 'package/index.d.ts', 'package/index.js', 'package/package.json']);
  const manifest = JSON.parse(execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' })) as Record<
    string,
    unknown
  >;
  assert.equal([manifest.dependencies, manifest.peerDependencies, manifest.optionalDependencies], [undefined, undefined, undefined]);
  assert.is(tarball.endsWith(`drainguard-client-${VERSION}.tgz`), true, tarball);
});

test('npm install --offline of the tarball, and the types check in a strict project', () => {
  npm('install', tarball);
  const installed = JSON.parse(readFileSync(join(project, 'node_modules/@drainguard/client/package.json'), 'utf8')) as { version: string };
  assert.is(installed.version, VERSION);
  const spec = (
    JSON.parse(readFileSync(join(project, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dependencies?: Record<string, string> }>;
    }
  ).packages['']!.dependencies;
  assert.equal(Object.keys(spec ?? {}), ['@drainguard/client']);
  assert.match(spec!['@drainguard/client']!, new RegExp(`^file:.*/drainguard-client-${VERSION.replaceAll('.', '\\.')}\\.tgz$`));
  writeFileSync(
    join(project, 'check.ts'),
    `import { DrainClient, connectDrainguard, type DrainClientOptions } from '@drainguard/client';
const options: DrainClientOptions = { name: 'typed', autoDrained: true };
const dg: DrainClient = connectDrainguard(options);
const signal: AbortSignal = dg.draining;
const done: (() => void) | undefined = dg.tryBegin();
const n: number = dg.inflight;
void signal; void done; void n;
// @ts-expect-error: a count is a number
dg.reportInflight('3');
`,
  );
  // The repository's TypeScript and @types/node: the scratch project only has the client.
  execFileSync(
    NODE,
    [
      resolve('node_modules/typescript/bin/tsc'),
      '--noEmit',
      '--strict',
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--target',
      'es2022',
      '--types',
      'node',
      '--typeRoots',
      resolve('node_modules/@types'),
      'check.ts',
    ],
    { cwd: project, encoding: 'utf8' },
  );
});

test('a demo operator using the installed package drains under drainguard', async () => {
  writeFileSync(
    join(project, 'operator.mjs'),
    `import { DrainClient } from '@drainguard/client';
const dg = new DrainClient({ name: 'scratch-operator' });
const say = (line) => process.stdout.write(line + '\\n');
dg.draining.addEventListener('abort', () => { say('drain received'); void dg.drainedSent().then(() => say('drained sent')); });
process.once('SIGTERM', () => { dg.close(); say('exit'); process.exit(0); });
await dg.ready();
const done = dg.begin();
say('ready');
dg.draining.addEventListener('abort', () => setTimeout(() => { say('work done'); done(); }, 200));
setInterval(() => {}, 1 << 30);
`,
  );
  const p = drainguard(['run', '--', NODE, join(project, 'operator.mjs')]);
  await p.line('ready');
  p.kill('SIGTERM');
  assert.is((await p.exit()).code, 0, p.stderr.join('\n'));
  assert.equal(p.stdout, ['ready', 'drain received', 'work done', 'drained sent', 'exit']);
  const logs = p.logs().map((l) => l.msg);
  assert.ok(logs.indexOf('client drained') >= 0 && logs.indexOf('client drained') < logs.indexOf('stop signal sent'), logs.join(', '));
  assert.equal(p.logs().find((l) => l.msg === 'drain ended')?.outcome, 'drained');
});

test.run();
