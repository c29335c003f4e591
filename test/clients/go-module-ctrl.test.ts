// The controller-runtime module (clients/go/ctrl) as a user gets it: `go get`
// from a module proxy (test/clients/support/go-proxy.ts), its client module
// fetched at the version its go.mod requires, no replace, no go.work: the
// oldest controller-runtime it supports, as its go.mod says. The modules come
// from the module cache's own download directory (a file proxy, filled by
// ctrlBuild) and then the environment's GOPROXY.

import { copyFileSync, existsSync, readFileSync, readdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GO, ctrlBuild, goEnv } from '../support/go.ts';
import { goProxy, quote } from './support/go-proxy.ts';

const { VERSION, CLIENT, CTRL, CTRL_DIR, modules, scratch } = goProxy();

test('go get the ctrl module from the proxy; its client at the required version; the example builds', () => {
  const env = goEnv();
  const goEnvValue = (name: string) => execFileSync(GO, ['env', name], { env, encoding: 'utf8' }).trim();
  const upstream = [
    `file://${goEnvValue('GOMODCACHE')}/cache/download`,
    ...goEnvValue('GOPROXY')
      .split(',')
      .filter((p) => p !== '' && p !== 'off'),
  ];
  const oldest = ctrlBuild('oldest');
  const { dir, go } = scratch('scratch-ctrl', oldest.goLine, upstream);
  for (const f of readdirSync(join(CTRL_DIR, 'example'))) {
    if (f.endsWith('.go') && !f.endsWith('_test.go')) copyFileSync(join(CTRL_DIR, 'example', f), join(dir, f));
  }
  go('get', `${CTRL.path}@${VERSION}`);
  go('mod', 'tidy');
  const all = go('list', '-m', 'all');
  assert.match(all, new RegExp(`^${quote(CTRL.path)} ${quote(VERSION)}$`, 'm'));
  assert.match(all, new RegExp(`^${quote(CLIENT.path)} ${quote(VERSION)}$`, 'm'));
  assert.match(all, new RegExp(`^sigs\\.k8s\\.io/controller-runtime ${quote(oldest.controllerRuntime)}$`, 'm'));
  const sum = readFileSync(join(dir, 'go.sum'), 'utf8');
  for (const m of modules) for (const line of m.sum.trim().split('\n')) assert.ok(sum.includes(`${line}\n`), `go.sum has ${line}`);
  go('build', '-o', 'operator', '.');
  assert.ok(existsSync(join(dir, 'operator')));
});

test.run();
