// The Go modules as a user gets them: `go get` from a module proxy, with no
// replace and no go.work anywhere in what is fetched. The proxy is a
// GOPROXY=file:// tree made from this checkout (scripts/release/go-module.ts,
// the module zip format, as proxy.golang.org would serve the release tags
// clients/go/vX.Y.Z and clients/go/ctrl/vX.Y.Z); a scratch module in a temp
// directory, with an empty module cache, fetches it and builds the example
// operator, which then drains under the built executable.

import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GO_MODULE_DIRS, moduleFiles } from '../../scripts/release/go-module.ts';
import { drainguard } from '../support/proc.ts';
import { goProxy, listFiles, quote } from './support/go-proxy.ts';

const { ROOT, VERSION, CLIENT, CTRL, CTRL_DIR, modules, scratch } = goProxy();

test('the client module: its own files only, nothing of clients/go/ctrl, no replace', () => {
  const files = moduleFiles(ROOT, CLIENT);
  assert.ok(files.includes('go.mod') && files.includes('drainguard.go') && files.includes('example/main.go'), files.join(' '));
  assert.equal(
    files.filter((f) => f.startsWith('ctrl/')),
    [],
  );
  assert.is(CLIENT.path, 'github.com/drainguard/drainguard/clients/go');
  assert.is(CTRL.path, 'github.com/drainguard/drainguard/clients/go/ctrl');
  for (const dir of GO_MODULE_DIRS) assert.not.match(readFileSync(join(dir, 'go.mod'), 'utf8'), /^\s*replace\b/m, `${dir}/go.mod`);
});

test('the ctrl module requires the client at this very version', () => {
  const mod = readFileSync(join(CTRL_DIR, 'go.mod'), 'utf8');
  assert.match(mod, new RegExp(`^\\s+${quote(CLIENT.path)} ${quote(VERSION)}$`, 'm'));
});

test('go get from the proxy, then build the example operator; it drains under drainguard', async () => {
  const { dir, modcache, go } = scratch('scratch', '1.19');
  copyFileSync(join(GO_MODULE_DIRS[0], 'example/main.go'), join(dir, 'main.go'));
  go('get', `${CLIENT.path}@${VERSION}`);
  assert.match(go('list', '-m', 'all'), new RegExp(`^${quote(CLIENT.path)} ${quote(VERSION)}$`, 'm'));
  // The checksums Go computed from the downloaded zip are the ones the release computes (the checksum database's).
  assert.equal(readFileSync(join(dir, 'go.sum'), 'utf8'), modules[0]!.sum);
  const cached = join(modcache, `${CLIENT.path}@${VERSION}`);
  assert.equal(listFiles(cached).sort(), moduleFiles(ROOT, CLIENT));
  go('build', '-o', 'operator', '.');

  const p = drainguard(['run', '--', join(dir, 'operator'), '-workers=2', '-min=200ms', '-max=400ms']);
  await p.line(/^reconcile start 2$/);
  p.kill('SIGTERM');
  assert.is((await p.exit()).code, 0, p.stderr.join('\n'));
  assert.equal(p.logs().find((l) => l.msg === 'drain ended')?.outcome, 'drained');
});

test.run();
