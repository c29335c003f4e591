// The drain recipe of clients/go/ctrl/README.md and of the README's
// controller-runtime section, compiled as written: each Go block, its import
// lines at the top of a main package and its statements as the body of main,
// against both builds of clients/go/ctrl (test/support/go.ts: the oldest
// controller-runtime it supports and the newest). The program supplies only what
// the READMEs say is the reader's own: `v1.Thing` (an API type, in a package v1
// of its own) and `r` (a reconciler), and `_ = err`, since the recipe leaves
// error handling to `// ...`.

import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type CtrlBuild, GO, ctrlBuild, goEnv } from '../support/go.ts';
import { tempDir } from '../support/proc.ts';

const CTRL_MODULE = 'github.com/drainguard/drainguard/clients/go/ctrl';
const CLIENT_MODULE = 'github.com/drainguard/drainguard/clients/go';

/** Where each recipe is: its file, and the line that opens its section (the first ```go block after it). */
const RECIPES = [
  { file: 'clients/go/ctrl/README.md', after: '## Usage' },
  { file: 'README.md', after: '**Go, controller-runtime**' },
];

/** The first ```go block after the line starting with `after`. */
function goBlock(file: string, after: string): string {
  const lines = readFileSync(file, 'utf8').split('\n');
  const from = lines.findIndex((l) => l.startsWith(after));
  if (from === -1) throw new Error(`${file}: no line starts with ${JSON.stringify(after)}`);
  const open = lines.findIndex((l, i) => i > from && l === '```go');
  const close = lines.findIndex((l, i) => i > open && l === '```');
  if (open === -1 || close === -1) throw new Error(`${file}: no \`\`\`go block after ${JSON.stringify(after)}`);
  return lines.slice(open + 1, close).join('\n');
}

/** The block as a main package: its imports (a single `import` line or an `import (...)` group) on top, the rest in main. */
function program(block: string): string {
  const imports: string[] = [];
  const body: string[] = [];
  let inGroup = false;
  for (const line of block.split('\n')) {
    if (inGroup) {
      if (line.trim() === ')') inGroup = false;
      else imports.push(line.trim());
    } else if (/^import \($/.test(line)) inGroup = true;
    else if (line.startsWith('import ')) imports.push(line.slice('import '.length).replace(/\s*\/\/.*$/, ''));
    else body.push(line === '' ? '' : `\t${line}`);
  }
  return [
    'package main',
    '',
    'import (',
    ...imports.filter((i) => i !== '').map((i) => `\t${i}`),
    '',
    '\tv1 "drainguard.test/recipe/api/v1"',
    ')',
    '',
    'func main() {',
    ...body,
    '\t_ = err',
    '}',
    '',
  ].join('\n');
}

// The reader's own parts: an API type and a reconciler.
const THING = `package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

type Thing struct {
	metav1.TypeMeta   \`json:",inline"\`
	metav1.ObjectMeta \`json:"metadata,omitempty"\`
}

func (t *Thing) DeepCopyObject() runtime.Object {
	c := *t
	t.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}
`;
const RECONCILER = `package main

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

type thingReconciler struct{}

func (thingReconciler) Reconcile(context.Context, reconcile.Request) (reconcile.Result, error) {
	return reconcile.Result{}, nil
}

var r = thingReconciler{}
`;

/**
 * A module of its own that builds `main` with the build's requirements (its go.mod and go.sum,
 * clients/go/ctrl and the client replaced by the ones here); go's output when the build fails.
 */
function buildProgram(build: CtrlBuild, main: string): { ok: boolean; output: string; binary: string } {
  const dir = join(tempDir(), 'recipe');
  mkdirSync(join(dir, 'api/v1'), { recursive: true });
  copyFileSync(build.modfile, join(dir, 'go.mod'));
  copyFileSync(build.modfile.replace(/\.mod$/, '.sum'), join(dir, 'go.sum'));
  writeFileSync(join(dir, 'main.go'), main);
  writeFileSync(join(dir, 'reconciler.go'), RECONCILER);
  writeFileSync(join(dir, 'api/v1/thing.go'), THING);
  const env = { ...goEnv(), GOWORK: 'off' };
  const edit = [
    '-module=drainguard.test/recipe',
    `-require=${CTRL_MODULE}@v0.0.0`,
    `-replace=${CTRL_MODULE}=${resolve('clients/go/ctrl')}`,
    `-replace=${CLIENT_MODULE}=${resolve('clients/go')}`,
  ];
  execFileSync(GO, ['mod', 'edit', ...edit], { cwd: dir, env });
  const binary = join(dir, 'recipe');
  const r = spawnSync(GO, ['build', '-o', binary, '.'], { cwd: dir, env, encoding: 'utf8', timeout: 600_000 });
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}${r.error?.message ?? ''}`, binary };
}

const builds = [ctrlBuild('oldest'), ctrlBuild('newest')];

for (const { file, after } of RECIPES) {
  for (const build of builds) {
    test(`${file}: the recipe builds against controller-runtime ${build.controllerRuntime}`, () => {
      const block = goBlock(file, after);
      assert.match(block, /dg\.Reconciler\(/, 'the block is the recipe');
      const built = buildProgram(build, program(block));
      assert.ok(built.ok, `the recipe of ${file} does not build:\n${program(block)}\n${built.output}`);
      assert.ok(existsSync(built.binary));
    });
  }
}

test('the control: the recipe with a method that does not exist fails to build, naming it', () => {
  const block = goBlock(RECIPES[0]!.file, RECIPES[0]!.after).replace('dg.Reconciler(', 'dg.Reconcile(');
  const built = buildProgram(builds[1]!, program(block));
  assert.not.ok(built.ok, 'a broken recipe must not build');
  assert.match(built.output, /dg\.Reconcile undefined/);
});

test.run();
